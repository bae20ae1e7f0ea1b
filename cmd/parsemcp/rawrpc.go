package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawRPC sends JSON-RPC requests of its own on the connection of an SDK
// client session (the console's dispatch): the server sees them in the
// same session as the client's, through the same pipeline. Its requests
// carry string ids ("raw-N"; the SDK client numbers its own), and their
// responses are taken off the connection before the SDK client reads it.
//
// It wraps the connection, so it serves transports whose client side has
// nothing else to hear from the session (in-memory, stdio); Streamable
// HTTP's connection is told the session's state through a method a
// wrapper cannot pass on.
type rawRPC struct {
	mu      sync.Mutex
	conn    mcp.Connection
	next    int
	pending map[string]chan *jsonrpc.Response
}

// errNoConnection: dispatch before the session connected, or after it
// ended.
var errNoConnection = errors.New("the session is not connected")

// wrap is t with the connection rawRPC sends on.
func (r *rawRPC) wrap(t mcp.Transport) mcp.Transport { return rawTransport{t, r} }

type rawTransport struct {
	mcp.Transport
	r *rawRPC
}

func (t rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.r.mu.Lock()
	t.r.conn = c
	t.r.mu.Unlock()
	return rawConn{c, t.r}, nil
}

type rawConn struct {
	mcp.Connection
	r *rawRPC
}

// Read passes every message on to the SDK client but the responses to
// rawRPC's own requests.
func (c rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && c.r.deliver(resp) {
			continue
		}
		return msg, err
	}
}

func (c rawConn) Close() error {
	c.r.mu.Lock()
	c.r.conn = nil
	c.r.mu.Unlock()
	return c.Connection.Close()
}

// deliver hands resp to the request waiting for it, and reports whether
// one was.
func (r *rawRPC) deliver(resp *jsonrpc.Response) bool {
	id, ok := resp.ID.Raw().(string)
	if !ok {
		return false
	}
	r.mu.Lock()
	ch, ok := r.pending[id]
	delete(r.pending, id)
	r.mu.Unlock()
	if ok {
		ch <- resp
	}
	return ok
}

// call sends a request for method with params (nil: none) and waits for
// its response: the result, or the JSON-RPC error as a *jsonrpc.Error.
// A method named notifications/… is sent as a notification, and answers
// nothing.
func (r *rawRPC) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	req := &jsonrpc.Request{Method: method, Params: params}
	var ch chan *jsonrpc.Response
	r.mu.Lock()
	conn := r.conn
	if conn != nil && !isNotification(method) {
		r.next++
		key := fmt.Sprintf("raw-%d", r.next)
		id, err := jsonrpc.MakeID(key)
		if err != nil {
			r.mu.Unlock()
			return nil, err
		}
		req.ID = id
		ch = make(chan *jsonrpc.Response, 1)
		if r.pending == nil {
			r.pending = map[string]chan *jsonrpc.Response{}
		}
		r.pending[key] = ch
		defer func() {
			r.mu.Lock()
			delete(r.pending, key)
			r.mu.Unlock()
		}()
	}
	r.mu.Unlock()
	if conn == nil {
		return nil, errNoConnection
	}
	if err := conn.Write(ctx, req); err != nil {
		return nil, err
	}
	if ch == nil {
		return nil, nil
	}
	select {
	case resp := <-ch:
		return resp.Result, resp.Error
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func isNotification(method string) bool { return strings.HasPrefix(method, "notifications/") }
