// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

// Tests of parsemcp patch 14 (PATCHES.md) through a real Streamable HTTP
// server: a tool call is handled on the goroutine of the HTTP request that
// carried it, and calls that wait for each other still both run.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// onRequestGoroutine reports whether the calling goroutine is serving a
// Streamable HTTP POST (servePOST is on its stack).
func onRequestGoroutine() bool {
	pcs := make([]uintptr, 256)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "mcp.(*streamableServerConn).servePOST") {
			return true
		}
		if !more {
			return false
		}
	}
}

func TestCallOnRequestGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts StreamableHTTPOptions
		want string
	}{
		{"stateful, SSE", StreamableHTTPOptions{}, "request"},
		{"stateful, JSON", StreamableHTTPOptions{JSONResponse: true}, "request"},
		{"stateless", StreamableHTTPOptions{Stateless: true}, "request"},
		// A resumable stream's request must be released while its call
		// runs (a GET resuming it after a dropped connection would
		// otherwise conflict with it): the call runs elsewhere.
		{"stateful, SSE, event store", StreamableHTTPOptions{EventStore: NewMemoryEventStore(nil)}, "elsewhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a hang only
			defer cancel()
			server := NewServer(&Implementation{Name: "t", Version: "1"}, nil)
			AddTool(server, &Tool{Name: "where"}, func(context.Context, *CallToolRequest, struct{}) (*CallToolResult, any, error) {
				text := "elsewhere"
				if onRequestGoroutine() {
					text = "request"
				}
				// "elsewhere" is the handler queue's goroutine.
				return &CallToolResult{Content: []Content{&TextContent{Text: text}}}, nil, nil
			})
			opts := tc.opts
			httpServer := httptest.NewServer(NewStreamableHTTPHandler(func(*http.Request) *Server { return server }, &opts))
			defer httpServer.Close()
			client := NewClient(&Implementation{Name: "c", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &StreamableClientTransport{Endpoint: httpServer.URL}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			// The first call may find the session still handling the
			// client's notifications/initialized, and wait behind it on the
			// handler queue; once it is answered, the session is idle.
			if _, err := cs.CallTool(ctx, &CallToolParams{Name: "where"}); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				res, err := cs.CallTool(ctx, &CallToolParams{Name: "where"})
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Content[0].(*TextContent).Text; got != tc.want {
					t.Errorf("the call ran %s, want %s (request: on the HTTP request's goroutine; elsewhere: on the handler queue's)", got, tc.want)
				}
			}
		})
	}
}

// TestCallsWaitingForEachOther: a call handled on its request's goroutine
// that waits for a second call of the same session does not hold the second
// back (tools/call is asynchronous to other requests, as before the patch).
func TestCallsWaitingForEachOther(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a hang only
	defer cancel()
	second := make(chan struct{})
	server := NewServer(&Implementation{Name: "t", Version: "1"}, nil)
	AddTool(server, &Tool{Name: "first"}, func(ctx context.Context, _ *CallToolRequest, _ struct{}) (*CallToolResult, any, error) {
		select {
		case <-second:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &CallToolResult{Content: []Content{&TextContent{Text: "first"}}}, nil, nil
	})
	AddTool(server, &Tool{Name: "second"}, func(context.Context, *CallToolRequest, struct{}) (*CallToolResult, any, error) {
		close(second)
		return &CallToolResult{Content: []Content{&TextContent{Text: "second"}}}, nil, nil
	})
	httpServer := httptest.NewServer(NewStreamableHTTPHandler(func(*http.Request) *Server { return server }, nil))
	defer httpServer.Close()
	cs, err := NewClient(&Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &StreamableClientTransport{Endpoint: httpServer.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	errs := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &CallToolParams{Name: "first"})
		errs <- err
	}()
	if _, err := cs.CallTool(ctx, &CallToolParams{Name: "second"}); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Fatalf("first: %v", err)
	}
}

// TestNoReadingGoroutine: a Streamable HTTP session's messages all come
// through Deliver, so no goroutine waits in the transport's Read
// (parsemcp patch 15; on v1.8.0 and with patch 14 alone, one does for
// every session, stateless calls included), and a session still ends when
// it is closed.
func TestNoReadingGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts StreamableHTTPOptions
	}{
		{"stateful", StreamableHTTPOptions{}},
		{"stateful, event store", StreamableHTTPOptions{EventStore: NewMemoryEventStore(nil)}},
		{"stateless", StreamableHTTPOptions{Stateless: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a hang only
			defer cancel()
			server := NewServer(&Implementation{Name: "t", Version: "1"}, nil)
			AddTool(server, &Tool{Name: "readers"}, func(context.Context, *CallToolRequest, struct{}) (*CallToolResult, any, error) {
				buf := make([]byte, 1<<20)
				stacks := string(buf[:runtime.Stack(buf, true)])
				text := strings.Count(stacks, "mcp.(*streamableServerConn).Read(")
				return &CallToolResult{Content: []Content{&TextContent{Text: strconv.Itoa(text)}}}, nil, nil
			})
			opts := tc.opts
			httpServer := httptest.NewServer(NewStreamableHTTPHandler(func(*http.Request) *Server { return server }, &opts))
			defer httpServer.Close()
			client := NewClient(&Implementation{Name: "c", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &StreamableClientTransport{Endpoint: httpServer.URL}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				res, err := cs.CallTool(ctx, &CallToolParams{Name: "readers"})
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Content[0].(*TextContent).Text; got != "0" {
					t.Errorf("%s goroutines wait in the server transport's Read during a call, want none", got)
				}
			}
			if err := cs.Close(); err != nil {
				t.Fatal(err)
			}
			// Every server session ends: the stateless ones after each
			// call, the stateful one on the client's DELETE.
			for n := 0; ; n++ {
				left := 0
				for range server.Sessions() {
					left++
				}
				if left == 0 {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("%d server sessions still open after the client closed", left)
				}
				time.Sleep(10 * time.Millisecond) // polls an event with no channel; the deadline bounds it
			}
		})
	}
}
