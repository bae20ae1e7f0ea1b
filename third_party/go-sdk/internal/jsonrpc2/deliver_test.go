// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

// Tests of parsemcp patch 14 (PATCHES.md): Connection.Deliver accepts a
// message on the caller's goroutine, and handles a call there when the
// handler is idle. What the handler sees must still be what v1.8.0 gave for
// messages read in the same order: one request at a time until one calls
// Async, in order.

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// onStack reports whether a function whose name ends with suffix is on the
// calling goroutine's stack.
func onStack(suffix string) bool {
	pcs := make([]uintptr, 128)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, suffix) {
			return true
		}
		if !more {
			return false
		}
	}
}

func call(t *testing.T, id int64, method string) *Request {
	t.Helper()
	m, err := NewCall(Int64ID(id), method, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDeliverHandlesHere: a call delivered with here on an idle connection
// is handled on the caller's goroutine, and answered before Deliver
// returns; without here, or for a notification, it goes to the queue's
// goroutine as a read message does.
func TestDeliverHandlesHere(t *testing.T) {
	type where struct {
		method               string
		deliver, handleAsync bool
	}
	seen := make(chan where, 10)
	s, c := startConn(t, func(ctx context.Context, req *Request) (any, error) {
		seen <- where{req.Method, onStack("jsonrpc2.(*Connection).Deliver"), onStack("jsonrpc2.(*Connection).handleAsync")}
		if !req.IsCall() {
			return nil, nil
		}
		return req.Method, nil
	})

	c.Deliver(call(t, 1, "here"), true)
	select {
	case r := <-s.out:
		if string(r.Result) != `"here"` {
			t.Fatalf("response %s, want here's", r.Result)
		}
	default:
		t.Fatal("Deliver with here returned before the call was answered")
	}
	if w := <-seen; !w.deliver || w.handleAsync {
		t.Errorf("a call delivered with here ran on Deliver's goroutine: %v, on the queue's: %v; want true, false", w.deliver, w.handleAsync)
	}

	c.Deliver(call(t, 2, "queued"), false)
	s.response(t)
	if w := <-seen; w.deliver || !w.handleAsync {
		t.Errorf("a call delivered without here ran on Deliver's goroutine: %v, on the queue's: %v; want false, true", w.deliver, w.handleAsync)
	}

	n, err := NewNotification("note", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Deliver(n, true)
	if w := <-seen; w.deliver || !w.handleAsync {
		t.Errorf("a notification delivered with here ran on Deliver's goroutine: %v, on the queue's: %v; want false, true (its sender is answered without waiting for it)", w.deliver, w.handleAsync)
	}
}

// TestDeliverQueuesBehindARunningRequest: a call delivered with here while
// another request is being handled (and has not called Async) waits behind
// it, as a read one would, and Deliver does not wait for either.
func TestDeliverQueuesBehindARunningRequest(t *testing.T) {
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	aStarted := make(chan struct{})
	finishA := make(chan struct{})
	s, c := startConn(t, func(ctx context.Context, req *Request) (any, error) {
		note(req.Method + " start")
		if req.Method == "a" {
			close(aStarted)
			waitIn(t, finishA, "the test to end a")
		}
		note(req.Method + " end")
		return req.Method, nil
	})
	go c.Deliver(call(t, 1, "a"), true)
	waitFor(t, aStarted, "a to start")
	c.Deliver(call(t, 2, "b"), true) // returns at once: b is queued behind a
	close(finishA)
	for range 2 {
		s.response(t)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "a start,a end,b start,b end"
	if got := strings.Join(order, ","); got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

// TestDeliverAfterAsync: a request handled on its deliverer's goroutine that
// calls Async lets the next call be handled too (on its own deliverer's
// goroutine, the queue being idle), so that a handler waiting for a later
// request does not deadlock; and requests queued meanwhile are handled.
func TestDeliverAfterAsync(t *testing.T) {
	bRan := make(chan struct{})
	bHere := make(chan bool, 1)
	s, c := startConn(t, func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "a":
			Async(ctx)
			waitIn(t, bRan, "b while a runs")
		case "b":
			bHere <- onStack("jsonrpc2.(*Connection).Deliver")
			close(bRan)
		}
		return req.Method, nil
	})
	done := make(chan struct{})
	go func() {
		c.Deliver(call(t, 1, "a"), true)
		close(done)
	}()
	c.Deliver(call(t, 2, "b"), true)
	got := map[string]bool{}
	for range 2 {
		got[string(s.response(t).Result)] = true
	}
	waitFor(t, done, "a's Deliver to return")
	if !got[`"a"`] || !got[`"b"`] {
		t.Errorf("responses %v, want a's and b's", got)
	}
	// b ran on its deliverer's goroutine if it found the queue idle (a had
	// called Async before b arrived), or on the queue's if it came first:
	// either way it ran, which is what this test is for.
	<-bHere
	c.Deliver(call(t, 3, "c"), true)
	if r := s.response(t); string(r.Result) != `"c"` {
		t.Errorf("response %s, want c's", r.Result)
	}
}

// TestDeliverResponse: a response delivered on the caller's goroutine
// answers the outgoing call it is for.
func TestDeliverResponse(t *testing.T) {
	_, c := startConn(t, func(ctx context.Context, req *Request) (any, error) {
		return nil, nil
	})
	ac := c.Call(context.Background(), "ask", nil)
	r, err := NewResponse(ac.ID(), "answer", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Deliver(r, true)
	var got string
	if err := ac.Await(context.Background(), &got); err != nil || got != "answer" {
		t.Errorf("Await = %q, %v; want answer, nil", got, err)
	}
}

// TestDeliverAfterClose: a call delivered once the connection is closing
// is refused (ErrServerClosing), not handled, and Deliver returns.
func TestDeliverAfterClose(t *testing.T) {
	ran := make(chan struct{}, 1)
	_, c := startConn(t, func(ctx context.Context, req *Request) (any, error) {
		ran <- struct{}{}
		return nil, nil
	})
	c.updateInFlight(func(s *inFlightState) { s.connClosing = true })
	c.Deliver(call(t, 1, "late"), true)
	select {
	case <-ran:
		t.Error("a call delivered after Close was handled")
	default:
	}
}

// TestDeliverAfterDone: a message delivered once the connection is
// completely done (its session closed between the transport's check and
// the delivery) is dropped; it must not corrupt the connection's state,
// which panicked on the next update.
func TestDeliverAfterDone(t *testing.T) {
	_, c := startConn(t, func(ctx context.Context, req *Request) (any, error) {
		t.Error("a message delivered after the connection was done was handled")
		return nil, nil
	})
	c.Close()
	c.Wait()
	n, err := NewNotification("late", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Deliver(call(t, 1, "late"), true)
	c.Deliver(n, false)
	c.Close()
	c.Wait()
}

// TestDeliverHandlerPanicEndsTheProcess: a handler that panics on the
// delivering goroutine ends the process, as it did on the connection's own
// goroutine, even when the deliverer's caller recovers panics (as net/http
// does), which would otherwise leave the connection waiting for the
// request for ever. The panic runs in a child process.
func TestDeliverHandlerPanicEndsTheProcess(t *testing.T) {
	if os.Getenv("JSONRPC2_DELIVER_PANIC") == "1" {
		_, c := startConn(t, func(ctx context.Context, req *Request) (any, error) {
			panic("handler boom")
		})
		func() {
			defer func() { _ = recover() }() // net/http's recovery
			c.Deliver(call(t, 1, "boom"), true)
		}()
		os.Exit(0) // reached only if the panic stayed recovered
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeliverHandlerPanicEndsTheProcess$")
	cmd.Env = append(os.Environ(), "JSONRPC2_DELIVER_PANIC=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the process went on after a handler's panic was recovered by the deliverer's caller:\n%s", out)
	}
	if !strings.Contains(string(out), "handler boom") {
		t.Errorf("the process ended without the handler's panic:\n%s", out)
	}
}

// TestDelivered: a connection whose messages all come through Deliver
// (ConnectionConfig.Delivered, parsemcp patch 15) never reads its Reader,
// answers what is delivered, and is done once closed: its transport is
// closed and OnDone called with no reading goroutine to notice the end,
// and a call delivered after that is dropped.
func TestDelivered(t *testing.T) {
	s := newChanStream()
	done := make(chan struct{})
	c := NewConnection(context.Background(), ConnectionConfig{
		Reader: s, Writer: s, Closer: s,
		Bind: func(*Connection) Handler {
			return HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
				if req.Method == "late" {
					t.Error("a call delivered after the connection was done was handled")
				}
				return req.Method, nil
			})
		},
		OnDone:    func() { close(done) },
		Delivered: true,
	})
	c.Deliver(call(t, 1, "here"), true)
	if r := s.response(t); string(r.Result) != `"here"` {
		t.Fatalf("response %s, want here's", r.Result)
	}
	c.Deliver(call(t, 2, "queued"), false)
	if r := s.response(t); string(r.Result) != `"queued"` {
		t.Fatalf("response %s, want queued's", r.Result)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, done, "OnDone")
	waitFor(t, s.closed, "the transport's Close")
	c.Wait()
	c.Deliver(call(t, 3, "late"), true)
	select {
	case <-s.reads:
		t.Error("the Reader of a delivered connection was read")
	default:
	}
}
