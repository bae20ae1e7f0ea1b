package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrUnknownSession is returned by Notify for a session id the server
// does not hold (never opened, closed, or expired).
var ErrUnknownSession = errors.New("mcpserver: unknown session")

// Notify sends one server-to-client notification to one session, for the
// embedding application: method is a notification the protocol defines
// (notifications/message, notifications/resources/updated,
// notifications/resources/list_changed, notifications/tools/list_changed,
// notifications/prompts/list_changed, notifications/progress, …) and
// params its parameters (anything that marshals to a JSON object; nil for
// none). Over Streamable HTTP it travels on the session's GET listening
// stream; a session that has none open does not receive it (the protocol
// has no other channel for it).
func (s *Server) Notify(ctx context.Context, sessionID, method string, params any) error {
	if !strings.HasPrefix(method, "notifications/") {
		return fmt.Errorf("mcpserver: Notify: %q is not a notification method", method)
	}
	raw := json.RawMessage("{}")
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return fmt.Errorf("mcpserver: Notify: params: %w", err)
		}
		if len(b) == 0 || b[0] != '{' {
			return fmt.Errorf("mcpserver: Notify: params must marshal to a JSON object, got %.20s", b)
		}
		raw = b
	}
	ss := s.session(sessionID)
	if ss == nil {
		return fmt.Errorf("%w %q", ErrUnknownSession, sessionID)
	}
	return notifyRaw(ctx, ss, method, raw)
}

// notifySession sends one notification to one session.
func notifySession(ctx context.Context, ss *mcp.ServerSession, method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return notifyRaw(ctx, ss, method, raw)
}

func notifyRaw(ctx context.Context, ss *mcp.ServerSession, method string, raw json.RawMessage) error {
	// The SDK sends only the notifications it has a method for; its
	// public progress sender carries ours, and the sending middleware
	// (notifyCarrier) swaps in the real method and parameters.
	ov := &notifyOverride{method: method, params: &rawParams{ProgressNotificationParams: &mcp.ProgressNotificationParams{}, raw: raw}}
	err := ss.NotifyProgress(context.WithValue(ctx, notifyKey{}, ov), &mcp.ProgressNotificationParams{ProgressToken: "parsemcp-notify"})
	if err != nil {
		return fmt.Errorf("mcpserver: Notify %s: %w", method, err)
	}
	return ov.err
}

// session returns the session with id, or nil.
func (s *Server) session(id string) *mcp.ServerSession {
	if id == "" {
		return nil
	}
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

type notifyKey struct{}

type notifyOverride struct {
	method string
	params *rawParams
	err    error
}

// rawParams are parameters already in JSON form. Embedding the SDK's
// progress parameters makes it a valid mcp.Params; MarshalJSON sends raw.
type rawParams struct {
	*mcp.ProgressNotificationParams
	raw json.RawMessage
}

func (p *rawParams) MarshalJSON() ([]byte, error) { return p.raw, nil }

// notifyCarrier is the sending middleware behind Notify.
func (s *Server) notifyCarrier(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ov, ok := ctx.Value(notifyKey{}).(*notifyOverride)
		if !ok || method != "notifications/progress" {
			return next(ctx, method, req)
		}
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok {
			return next(ctx, method, req)
		}
		res, err := next(context.WithValue(ctx, notifyKey{}, nil), ov.method, &mcp.ServerRequest[*rawParams]{Session: ss, Params: ov.params})
		if err != nil {
			ov.err = fmt.Errorf("mcpserver: Notify %s: %w", ov.method, err)
		}
		return res, err
	}
}
