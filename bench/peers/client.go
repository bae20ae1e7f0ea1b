package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/internal/rawmcp"
)

// A worker makes one request of an operation and reads its whole answer.
// Each concurrent client of a cell has its own worker.
type worker interface {
	do(ctx context.Context, op string) error
	close()
}

// protocolWorker is a worker of an MCP session: protocol is the version
// the server chose at initialize.
type protocolWorker interface {
	protocol() string
}

// call is one MCP tools/call: the tool and its arguments as JSON text.
type call struct{ tool, args string }

// rawMCP is the client of least work (internal/rawmcp) with the
// target's calls.
type rawMCP struct {
	c     *rawmcp.Client
	calls map[string]call
}

var errNotResult = rawmcp.ErrNotResult

// newRawMCP connects the raw client asking for protocol ("":
// rawmcp.Protocol).
func newRawMCP(ctx context.Context, hc *http.Client, url string, headers map[string]string, calls map[string]call, protocol string) (*rawMCP, error) {
	if protocol == "" {
		protocol = rawmcp.Protocol
	}
	c, err := rawmcp.ConnectAt(ctx, hc, url, headers, protocol)
	if err != nil {
		return nil, err
	}
	return &rawMCP{c: c, calls: calls}, nil
}

func (w *rawMCP) do(ctx context.Context, op string) error {
	c, ok := w.calls[op]
	if !ok {
		return fmt.Errorf("no call for %s", op)
	}
	return w.c.Call(ctx, c.tool, c.args)
}

func (w *rawMCP) close() {}

func (w *rawMCP) protocol() string { return w.c.Protocol() }

// sdkMCP is the official go-sdk client: what an application would see,
// client decoding included.
type sdkMCP struct {
	cs    *mcp.ClientSession
	calls map[string]call
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// newSDKMCP connects the go-sdk client asking for protocol ("": its
// latest).
func newSDKMCP(ctx context.Context, hc *http.Client, url string, headers map[string]string, calls map[string]call, protocol string) (*sdkMCP, error) {
	c := *hc
	c.Transport = headerTransport{base: hc.Transport, headers: headers}
	client := mcp.NewClient(&mcp.Implementation{Name: "parsemcp-bench-peers-sdk", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &c, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		return nil, err
	}
	return &sdkMCP{cs: cs, calls: calls}, nil
}

func (w *sdkMCP) do(ctx context.Context, op string) error {
	c, ok := w.calls[op]
	if !ok {
		return fmt.Errorf("no call for %s", op)
	}
	res, err := w.cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)})
	if err != nil {
		return err
	}
	if res.IsError {
		return errNotResult
	}
	return nil
}

func (w *sdkMCP) close() { _ = w.cs.Close() }

func (w *sdkMCP) protocol() string { return w.cs.InitializeResult().ProtocolVersion }

// restWorker is a Parse Server REST client with the master key.
type restWorker struct {
	hc      *http.Client
	base    string
	headers map[string]string
	paths   map[string]string
}

func (w *restWorker) do(ctx context.Context, op string) error {
	p, ok := w.paths[op]
	if !ok {
		return fmt.Errorf("no path for %s", op)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.base+p, nil)
	if err != nil {
		return err
	}
	for k, v := range w.headers {
		req.Header.Set(k, v)
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 || n == 0 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

func (w *restWorker) close() {}
