package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// liftCategory moves the non-standard top-level `category` param of a
// tools/list request into `_meta.category`, where the SDK keeps it (it drops
// unknown top-level params). Clients may send either form.
func liftCategory(params json.RawMessage) (json.RawMessage, bool) {
	if !bytes.Contains(params, []byte(`"category"`)) {
		return params, false
	}
	return editParams(params, func(m, meta map[string]json.RawMessage) bool {
		cat, ok := m["category"]
		if !ok {
			return false
		}
		delete(m, "category")
		if _, set := meta["category"]; !set {
			meta["category"] = cat
		}
		return true
	})
}

// editParams decodes params (a JSON object) and its _meta (absent or null:
// empty), lets edit change both, and encodes the result. Params that are
// not an object, a _meta that is not one, or edit returning false leave
// params as they are (changed false).
func editParams(params json.RawMessage, edit func(m, meta map[string]json.RawMessage) bool) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil || m == nil {
		return params, false
	}
	var meta map[string]json.RawMessage
	if raw, ok := m["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return params, false
		}
	}
	if meta == nil { // absent, or "_meta": null
		meta = map[string]json.RawMessage{}
	}
	if !edit(m, meta) {
		return params, false
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return params, false
	}
	m["_meta"] = mb
	out, err := json.Marshal(m)
	if err != nil {
		return params, false
	}
	return out, true
}

// liftRequest rewrites the params of the requests the SDK needs help with:
// a tools/list request gets its category lifted (liftCategory), and a
// subscriptions/listen request gets its own JSON-RPC id in
// _meta["dev.parsemcp/listenId"] (any value the client put there is
// replaced), which the SDK passes to the subscribe handler: notifications
// for the listen must name it.
func liftRequest(method string, id, params json.RawMessage) (json.RawMessage, bool) {
	switch method {
	case "tools/list":
		return liftCategory(params)
	case "subscriptions/listen":
		if len(id) == 0 || string(id) == "null" {
			return params, false
		}
		return setMeta(params, listenIDMeta, id)
	case "resources/subscribe", "resources/unsubscribe":
		// Only the transport says which listen a subscription belongs to.
		return editParams(params, func(_, meta map[string]json.RawMessage) bool {
			if _, ok := meta[listenIDMeta]; !ok {
				return false
			}
			delete(meta, listenIDMeta)
			return true
		})
	}
	return params, false
}

// setMeta sets _meta[key] in params, a JSON object (anything else is left
// as it is, for the SDK to refuse).
func setMeta(params json.RawMessage, key string, value json.RawMessage) (json.RawMessage, bool) {
	return editParams(params, func(_, meta map[string]json.RawMessage) bool {
		meta[key] = value
		return true
	})
}

// WrapTransport adapts a transport for this server: tools/list requests get
// their category lifted, and subscriptions/listen requests carry their id
// to the subscribe handler (liftRequest). Use it for stdio, in-memory and
// command transports.
func WrapTransport(t mcp.Transport) mcp.Transport { return liftingTransport{t} }

type liftingTransport struct{ mcp.Transport }

func (t liftingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return liftingConn{c}, nil
}

type liftingConn struct{ mcp.Connection }

func (c liftingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		var id json.RawMessage
		if req.Method == "subscriptions/listen" && req.ID.IsValid() { // only a listen's id is passed on
			id, _ = json.Marshal(req.ID.Raw())
		}
		if p, changed := liftRequest(req.Method, id, req.Params); changed {
			req.Params = p
		}
	}
	return msg, err
}

// RunStdio serves one session over in/out (newline-delimited JSON-RPC)
// until the client disconnects or ctx ends.
func (s *Server) RunStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	return s.mcp.Run(ctx, WrapTransport(&mcp.IOTransport{Reader: in, Writer: out}))
}

// Connect serves one session over t (for in-process use and tests).
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	return s.mcp.Connect(ctx, WrapTransport(t), nil)
}

// CallTool runs one tool through a real in-memory MCP session (the same
// path as any client: agent factory, guard chain, result shaping) and
// returns the structured result and whether it is a tool error. It is the
// operator's surface (parsemcp call): its agent may also call the
// operator-only introspection tools (describe_agent, would_permit),
// whatever its policy says; their tier still applies.
func (s *Server) CallTool(ctx context.Context, name string, args json.RawMessage) (any, bool, error) {
	return s.CallToolWithApproval(ctx, name, args, nil)
}

// CallToolWithApproval is CallTool for a caller that can approve
// destructive changes: approve is shown what would happen and answers
// yes (true) or no. A nil approve cannot approve anything: destructive
// changes are refused unless the server runs with DisableApproval.
func (s *Server) CallToolWithApproval(ctx context.Context, name string, args json.RawMessage, approve func(ctx context.Context, message string) (bool, error)) (any, bool, error) {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st)
	if err != nil {
		return nil, false, err
	}
	defer ss.Close()
	s.operators.Store(ss, struct{}{})
	defer s.operators.Delete(ss)
	var copts *mcp.ClientOptions
	if approve != nil {
		copts = &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			yes, err := approve(ctx, req.Params.Message)
			if err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": yes}}, nil
		}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "parsemcp-call", Version: Version}, copts)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		return nil, false, err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, false, err
	}
	var out any
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			if err := json.Unmarshal([]byte(tc.Text), &out); err != nil {
				return nil, false, fmt.Errorf("tool %s returned non-JSON text: %w", name, err)
			}
		}
	}
	return out, res.IsError, nil
}

// liftBody applies liftRequest to a request body (one JSON-RPC message;
// batches and anything else pass unchanged), and returns the message's
// method ("" when the body is not one message).
func liftBody(body []byte) ([]byte, string) {
	env, ok := parseEnvelope(body)
	if !ok {
		return body, ""
	}
	return liftEnvelope(body, env)
}

// liftEnvelope is liftBody for a body already decoded (env).
func liftEnvelope(body []byte, env envelope) ([]byte, string) {
	m, ok := env.single()
	if !ok || m.Method == nil {
		return body, ""
	}
	method := *m.Method
	p, changed := liftRequest(method, m.ID, m.Params)
	if !changed {
		return body, method
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		return body, method
	}
	msg["params"] = p
	out, err := json.Marshal(msg)
	if err != nil {
		return body, method
	}
	return out, method
}
