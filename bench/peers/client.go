package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A worker makes one request of an operation and reads its whole answer.
// Each concurrent client of a cell has its own worker.
type worker interface {
	do(ctx context.Context, op string) error
	close()
}

// call is one MCP tools/call: the tool and its arguments as JSON text.
type call struct{ tool, args string }

// rawMCP speaks Streamable HTTP JSON-RPC with plain POSTs: one initialize,
// then tools/call after tools/call on the session. It reads each answer to
// its end (JSON or an SSE stream) and checks it is a result, not an error,
// without decoding it: the client's own work stays out of the figures.
type rawMCP struct {
	hc      *http.Client
	url     string
	headers map[string]string
	calls   map[string]call
	session string
	proto   string
	next    int
	buf     bytes.Buffer
}

var errNotResult = errors.New("answer is not a successful tool result")

func newRawMCP(ctx context.Context, hc *http.Client, url string, headers map[string]string, calls map[string]call) (*rawMCP, error) {
	w := &rawMCP{hc: hc, url: url, headers: headers, calls: calls}
	body, h, err := w.post(ctx, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"parsemcp-bench-peers","version":"1"}}}`)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	var m struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(sseData(body), &m); err != nil || m.Result.ProtocolVersion == "" {
		return nil, fmt.Errorf("initialize: unexpected answer %.200q", body)
	}
	w.session = h.Get("Mcp-Session-Id")
	w.proto = m.Result.ProtocolVersion
	if _, _, err := w.post(ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return nil, fmt.Errorf("initialized: %w", err)
	}
	return w, nil
}

func (w *rawMCP) post(ctx context.Context, body string) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range w.headers {
		req.Header.Set(k, v)
	}
	if w.session != "" {
		req.Header.Set("Mcp-Session-Id", w.session)
	}
	if w.proto != "" {
		req.Header.Set("Mcp-Protocol-Version", w.proto)
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	w.buf.Reset()
	if _, err := w.buf.ReadFrom(resp.Body); err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, w.buf.Bytes())
	}
	return w.buf.Bytes(), resp.Header, nil
}

func (w *rawMCP) do(ctx context.Context, op string) error {
	c, ok := w.calls[op]
	if !ok {
		return fmt.Errorf("no call for %s", op)
	}
	w.next++
	body, _, err := w.post(ctx, `{"jsonrpc":"2.0","id":`+strconv.Itoa(w.next)+`,"method":"tools/call","params":{"name":"`+c.tool+`","arguments":`+c.args+`}}`)
	if err != nil {
		return err
	}
	if !bytes.Contains(body, []byte(`"result"`)) || bytes.Contains(body, []byte(`"isError":true`)) {
		return fmt.Errorf("%w: %.300s", errNotResult, body)
	}
	return nil
}

func (w *rawMCP) close() {}

// sseData returns the data of the first SSE event of body, or body itself
// when it is plain JSON.
func sseData(body []byte) []byte {
	for line := range bytes.Lines(body) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			return bytes.TrimSpace(d)
		}
	}
	return body
}

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

func newSDKMCP(ctx context.Context, hc *http.Client, url string, headers map[string]string, calls map[string]call) (*sdkMCP, error) {
	c := *hc
	c.Transport = headerTransport{base: hc.Transport, headers: headers}
	client := mcp.NewClient(&mcp.Implementation{Name: "parsemcp-bench-peers-sdk", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &c, DisableStandaloneSSE: true}, nil)
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
