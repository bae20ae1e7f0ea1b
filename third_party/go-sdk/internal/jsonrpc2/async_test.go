// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

// Tests of parsemcp patch 9 (PATCHES.md): a request is handled on the
// goroutine that runs the handler queue, and Async hands the queue over.
// What the handler sees must be what v1.8.0 gave: requests in arrival order,
// one at a time until one calls Async, after which the next may start.

import (
	"context"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"
)

// hang bounds a wait that only a deadlock would exceed.
const hang = 30 * time.Second

// chanStream is a Reader, Writer and Closer over channels: each Read call
// is announced on reads before it takes the next message, so a test knows
// when the connection has accepted (queued) every message it was given.
type chanStream struct {
	in        chan Message
	reads     chan struct{}
	out       chan *Response
	closeOnce sync.Once
	closed    chan struct{}
}

func newChanStream() *chanStream {
	return &chanStream{
		in:     make(chan Message),
		reads:  make(chan struct{}, 1000),
		out:    make(chan *Response, 1000),
		closed: make(chan struct{}),
	}
}

func (s *chanStream) Read(ctx context.Context) (Message, error) {
	s.reads <- struct{}{}
	select {
	case m := <-s.in:
		return m, nil
	case <-s.closed:
		return nil, io.EOF
	}
}

func (s *chanStream) Write(ctx context.Context, m Message) error {
	if r, ok := m.(*Response); ok {
		s.out <- r
	}
	return nil
}

func (s *chanStream) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

func startConn(t *testing.T, h HandlerFunc) (*chanStream, *Connection) {
	t.Helper()
	s := newChanStream()
	c := NewConnection(context.Background(), ConnectionConfig{
		Reader: s, Writer: s, Closer: s,
		Bind: func(*Connection) Handler { return h },
	})
	t.Cleanup(func() {
		c.Close()
		c.Wait()
	})
	waitFor(t, s.reads, "the first read")
	return s, c
}

// send hands the connection a call and returns once the connection has
// queued it (it is reading again).
func (s *chanStream) send(t *testing.T, id int64, method string) {
	t.Helper()
	m, err := NewCall(Int64ID(id), method, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case s.in <- m:
	case <-time.After(hang):
		t.Fatalf("the connection did not read call %d", id)
	}
	waitFor(t, s.reads, "the read after the call")
}

func (s *chanStream) response(t *testing.T) *Response {
	t.Helper()
	select {
	case r := <-s.out:
		return r
	case <-time.After(hang):
		t.Fatal("no response")
		return nil
	}
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(hang):
		t.Fatalf("waited for %s", what)
	}
}

// waitIn is waitFor for a handler's goroutine, which may not call t.Fatal.
func waitIn(t *testing.T, ch <-chan struct{}, what string) {
	select {
	case <-ch:
	case <-time.After(hang):
		t.Errorf("waited for %s", what)
	}
}

// TestHandlerQueueWithoutAsync: requests whose handlers do not call Async
// run one at a time, in arrival order, even when both are queued before the
// first returns.
func TestHandlerQueueWithoutAsync(t *testing.T) {
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	started := make(chan struct{})
	finishA := make(chan struct{})
	s, _ := startConn(t, func(ctx context.Context, req *Request) (any, error) {
		note(req.Method + " start")
		if req.Method == "a" {
			close(started)
			<-finishA
		}
		note(req.Method + " end")
		return req.Method, nil
	})
	s.send(t, 1, "a")
	waitFor(t, started, "a to start")
	s.send(t, 2, "b") // queued behind a
	close(finishA)
	for range 2 {
		s.response(t)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"a start", "a end", "b start", "b end"}
	if len(order) != len(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
}

// TestAsyncLetsTheQueueGoOn: a handler that calls Async and then waits for
// the request queued behind it is not waited for (which would deadlock),
// and a request that arrives after an Async on an empty queue is handled
// while the released one still runs; requests after those are handled too.
func TestAsyncLetsTheQueueGoOn(t *testing.T) {
	bRan := make(chan struct{})
	cRan := make(chan struct{})
	aReleased := make(chan struct{})
	s, _ := startConn(t, func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "a": // released with b already queued
			Async(ctx)
			waitIn(t, bRan, "b while a runs")
		case "b":
			close(bRan)
		case "c": // released with nothing queued
			Async(ctx)
			close(aReleased)
			waitIn(t, cRan, "d while c runs")
		case "d":
			close(cRan)
		}
		return req.Method, nil
	})
	s.send(t, 1, "a")
	s.send(t, 2, "b")
	got := map[string]bool{}
	for range 2 {
		got[string(s.response(t).Result)] = true
	}
	s.send(t, 3, "c")
	waitFor(t, aReleased, "c to call Async")
	s.send(t, 4, "d")
	for range 2 {
		got[string(s.response(t).Result)] = true
	}
	s.send(t, 5, "e")
	got[string(s.response(t).Result)] = true
	for _, m := range []string{`"a"`, `"b"`, `"c"`, `"d"`, `"e"`} {
		if !got[m] {
			t.Errorf("no response to %s (got %v)", m, got)
		}
	}
}

// TestAsyncRequestsShareTheQueueGoroutine: what the patch saves. A request
// runs on the goroutine that runs the queue (handleAsync's own frame is on
// its stack), where v1.8.0 started a goroutine for each request (a closure
// inside handleAsync) and parked the queue's until the request called Async.
func TestAsyncRequestsShareTheQueueGoroutine(t *testing.T) {
	onQueue := make(chan bool, 2)
	s, _ := startConn(t, func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "async" {
			Async(ctx)
		}
		onQueue <- onStack("jsonrpc2.(*Connection).handleAsync")
		return true, nil
	})
	for i, m := range []string{"sync", "async"} {
		s.send(t, int64(i+1), m)
		s.response(t)
		if !<-onQueue {
			t.Errorf("a %s request ran on a goroutine of its own, not the queue's", m)
		}
	}
}

// TestReleasedRequestLeavesTheQueue: once a request has called Async, the
// goroutine it runs on belongs to it; when it returns, that goroutine does
// not take more requests, which would run a request queued behind a
// synchronous one before that one ends.
func TestReleasedRequestLeavesTheQueue(t *testing.T) {
	bStarted := make(chan struct{})
	xQueued := make(chan struct{})
	finishB := make(chan struct{})
	var mu sync.Mutex
	bEnded, xBeforeB := false, false
	s, _ := startConn(t, func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "a": // released; returns with b running and x queued behind it
			Async(ctx)
			waitIn(t, bStarted, "b to start")
			waitIn(t, xQueued, "x to be queued")
		case "b": // synchronous: x must wait for it
			close(bStarted)
			waitIn(t, finishB, "the test to end b")
			mu.Lock()
			bEnded = true
			mu.Unlock()
		case "x":
			mu.Lock()
			xBeforeB = !bEnded
			mu.Unlock()
		}
		return req.Method, nil
	})
	s.send(t, 1, "a")
	s.send(t, 2, "b")
	waitFor(t, bStarted, "b to start")
	s.send(t, 3, "x")
	close(xQueued)
	if r := s.response(t); string(r.Result) != `"a"` {
		t.Fatalf("first response %s, want a's", r.Result)
	}
	// a's goroutine is past its handler now; had it gone back to the queue
	// it would be running x already.
	runtime.Gosched()
	close(finishB)
	for range 2 {
		s.response(t)
	}
	mu.Lock()
	defer mu.Unlock()
	if xBeforeB {
		t.Error("x started before b, the synchronous request queued ahead of it, ended")
	}
}
