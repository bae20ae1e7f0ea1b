// Package rawmcp is the MCP client of least work of the benchmarks and of
// internal/walkcall: it speaks
// Streamable HTTP JSON-RPC with plain POSTs (one initialize, then
// tools/call after tools/call on the session; at the stateless 2026-07-28
// protocol one server/discover, then each tools/call on its own, carrying
// its version and capabilities in _meta and the Mcp-Method and Mcp-Name
// headers), reads each answer to its end (JSON or an SSE stream) and
// checks that it is a result, not an error, without decoding it, so the
// client's own work stays out of the figures. One Client is one session;
// it is not safe for concurrent use.
package rawmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// ErrNotResult is returned for an answer that is not a successful tool
// result.
var ErrNotResult = errors.New("answer is not a successful tool result")

// Client is one MCP session.
type Client struct {
	hc      *http.Client
	url     string
	headers map[string]string
	session string
	proto   string
	// meta is the _meta member every request carries at the stateless
	// protocol ("" in a session).
	meta string
	next int
	buf  bytes.Buffer
}

// Protocol is the protocol version Connect asks for.
const Protocol = "2025-06-18"

// Stateless is the first protocol version without sessions: no
// initialize, each request carrying its version in _meta.
const Stateless = "2026-07-28"

// Connect initializes a session at url (protocol Protocol), sending
// headers with every request.
func Connect(ctx context.Context, hc *http.Client, url string, headers map[string]string) (*Client, error) {
	return ConnectAt(ctx, hc, url, headers, Protocol)
}

// ConnectAt is Connect asking for protocol version proto. At Stateless
// and later it makes no session: it asks server/discover whether the
// server speaks proto, and when it does not (a server of sessions only)
// falls back to initialize asking for proto, which the server answers
// with the version it chose (Protocol reports it).
func ConnectAt(ctx context.Context, hc *http.Client, url string, headers map[string]string, proto string) (*Client, error) {
	c := &Client{hc: hc, url: url, headers: headers}
	if proto >= Stateless {
		if ok, err := c.discover(ctx, proto); err != nil || ok {
			return c, err
		}
	}
	body, h, err := c.post(ctx, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+proto+`","capabilities":{},"clientInfo":{"name":"parsemcp-bench","version":"1"}}}`, "initialize", "")
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	var m struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(SSEData(body), &m); err != nil || m.Result.ProtocolVersion == "" {
		return nil, fmt.Errorf("initialize: unexpected answer %.200q", body)
	}
	c.session = h.Get("Mcp-Session-Id")
	c.proto = m.Result.ProtocolVersion
	if _, _, err := c.post(ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "notifications/initialized", ""); err != nil {
		return nil, fmt.Errorf("initialized: %w", err)
	}
	return c, nil
}

// discover asks server/discover at the stateless protocol proto and
// reports whether the server supports it; a server that does not know
// the method (or refuses the version) is answered false, no error.
func (c *Client) discover(ctx context.Context, proto string) (bool, error) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + proto + `","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"parsemcp-bench","version":"1"}}`
	c.proto = proto
	body, _, err := c.post(ctx, `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{`+meta+`}}`, "server/discover", "")
	c.proto = ""
	if err != nil {
		return false, nil // not a stateless server: initialize instead
	}
	var m struct {
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
	}
	if err := json.Unmarshal(SSEData(body), &m); err != nil {
		return false, fmt.Errorf("server/discover: unexpected answer %.200q", body)
	}
	for _, v := range m.Result.SupportedVersions {
		if v == proto {
			c.proto, c.meta = proto, meta
			return true, nil
		}
	}
	return false, nil
}

// Protocol is the protocol version the server chose at initialize.
func (c *Client) Protocol() string { return c.proto }

// Call makes one tools/call with args (JSON text) and reads the whole
// answer; an answer that is not a successful result is ErrNotResult.
func (c *Client) Call(ctx context.Context, tool, args string) error {
	c.next++
	params := `{"name":"` + tool + `","arguments":` + args + `}`
	if c.meta != "" {
		params = `{` + c.meta + `,"name":"` + tool + `","arguments":` + args + `}`
	}
	body, _, err := c.post(ctx, `{"jsonrpc":"2.0","id":`+strconv.Itoa(c.next)+`,"method":"tools/call","params":`+params+`}`, "tools/call", tool)
	if err != nil {
		return err
	}
	if !bytes.Contains(body, []byte(`"result"`)) || bytes.Contains(body, []byte(`"isError":true`)) {
		return fmt.Errorf("%w: %.300s", ErrNotResult, body)
	}
	return nil
}

// Ping sends a JSON-RPC ping and reads the answer: the round trip of the
// transport and the SDK alone, no tool. The stateless protocol has no
// ping.
func (c *Client) Ping(ctx context.Context) error {
	if c.meta != "" {
		return errors.New("ping: no such method at the stateless protocol")
	}
	c.next++
	body, _, err := c.post(ctx, `{"jsonrpc":"2.0","id":`+strconv.Itoa(c.next)+`,"method":"ping"}`, "ping", "")
	if err != nil {
		return err
	}
	if !bytes.Contains(body, []byte(`"result"`)) {
		return fmt.Errorf("%w: %.300s", ErrNotResult, body)
	}
	return nil
}

// post sends one JSON-RPC message of method (name: the tool of a
// tools/call); at the stateless protocol both are headers too.
func (c *Client) post(ctx context.Context, body, method, name string) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.proto != "" {
		req.Header.Set("Mcp-Protocol-Version", c.proto)
	}
	if c.proto >= Stateless {
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	c.buf.Reset()
	if _, err := c.buf.ReadFrom(resp.Body); err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, c.buf.Bytes())
	}
	return c.buf.Bytes(), resp.Header, nil
}

// SSEData returns the data of the first SSE event of body, or body itself
// when it is plain JSON.
func SSEData(body []byte) []byte {
	for line := range bytes.Lines(body) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			return bytes.TrimSpace(d)
		}
	}
	return body
}
