package mcpserver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// DefaultApprovalTimeout bounds the wait for a person to approve a
// destructive change.
const DefaultApprovalTimeout = 300 * time.Second

// approvalInputID is the id of the approval in a multi-round-trip
// input request (protocol 2026-07-28).
const approvalInputID = "parsemcp_approval"

// multiRoundTripVersion is the first protocol version whose clients answer
// input requests by retrying the call (the SDK's multi round-trip).
const multiRoundTripVersion = "2026-07-28"

// approvalSchema is the form shown to the person: one required yes/no.
var approvalSchema = &jsonschema.Schema{
	Type: "object",
	Properties: map[string]*jsonschema.Schema{
		"approve": {Type: "boolean", Title: "Approve this change", Description: "Yes runs the change now; no cancels it and nothing is written."},
	},
	Required: []string{"approve"},
}

// approvals asks a person, through the client's elicitation, before a
// destructive change runs.
type approvals struct {
	disabled bool
	timeout  time.Duration
	timing   timing // measures timeout
	secret   []byte
}

func newApprovals(o Options) (*approvals, error) {
	a := &approvals{disabled: o.DisableApproval, timeout: o.ApprovalTimeout, timing: timing{o.Clock}, secret: o.ApprovalSecret}
	if a.timeout <= 0 {
		a.timeout = DefaultApprovalTimeout
	}
	if len(a.secret) == 0 {
		a.secret = make([]byte, 32)
		if _, err := rand.Read(a.secret); err != nil {
			return nil, err
		}
	} else if len(a.secret) < 16 {
		return nil, errors.New("mcpserver: Options.ApprovalSecret must be at least 16 bytes")
	}
	return a, nil
}

// inputRequired unwinds a tool call whose approval is asked of a
// 2026-07-28 client: the handler answers with the input request and the
// signed state, and the client retries the call with the person's answer.
type inputRequired struct {
	requests mcp.InputRequestMap
	state    string
}

func (e *inputRequired) Error() string { return "input required: waiting for the person's approval" }

// As lets the guards (metrics, audit) see the round as a tool error with
// code input_required.
func (e *inputRequired) As(target any) bool {
	if te, ok := target.(**tools.Error); ok {
		*te = &tools.Error{Code: "input_required", Message: e.Error()}
		return true
	}
	return false
}

func denied(kind, format string, args ...any) error {
	return &tools.Error{Code: tools.CodeApprovalDenied, Message: fmt.Sprintf(format, args...) + "; nothing was changed", Details: map[string]any{"kind": kind}}
}

// hook returns the ApproveFunc of one tools/call request.
func (ap *approvals) hook(req *mcp.CallToolRequest, a *agent.Agent) tools.ApproveFunc {
	if ap.disabled {
		return nil
	}
	return func(ctx context.Context, what tools.Approval) (context.Context, error) {
		ss := req.Session
		if ss == nil {
			return ctx, denied("unsupported", "%s needs a person's approval and this connection cannot ask for it", what.Tool)
		}
		ip := ss.InitializeParams()
		if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
			return ctx, denied("unsupported", "%s needs a person's approval, and this client cannot ask for one (it does not support elicitation)", what.Tool)
		}
		params := &mcp.ElicitParams{
			Mode:            "form",
			Message:         what.Summary + " Approve?",
			RequestedSchema: approvalSchema,
		}
		if ip.ProtocolVersion >= multiRoundTripVersion {
			return ctx, ap.roundTrip(req, a, what, params)
		}
		// Older clients: ask now, on the request's stream. The wait is
		// bounded by the approval timeout, not by the tool's time limit,
		// and ends with the request (cancellation, DELETE of the session).
		// Waiting for a person holds no server-wide stream slot (the
		// principal's own in-flight slot stays taken).
		if res, ok := resolvedFrom(req.GetExtra()); ok {
			res.ticket.releaseStream()
		}
		parent, rearm := waitContext(ctx)
		wctx, cancel := ap.timing.withTimeout(parent, ap.timeout)
		defer cancel()
		res, err := ss.Elicit(wctx, params)
		if err != nil {
			switch {
			case errors.Is(wctx.Err(), context.DeadlineExceeded) && parent.Err() == nil:
				return ctx, denied("timeout", "no answer to the approval request within %s", ap.timeout)
			case parent.Err() != nil:
				return ctx, parent.Err()
			}
			return ctx, denied("unsupported", "the approval request failed: %v", err)
		}
		if err := verdict(res); err != nil {
			return ctx, err
		}
		return rearm(), nil
	}
}

// verdict turns the person's answer into nil (approved) or a refusal.
func verdict(res *mcp.ElicitResult) error {
	if res == nil {
		return denied("declined", "the change was not approved")
	}
	switch res.Action {
	case "accept":
		if v, ok := res.Content["approve"].(bool); ok && v {
			return nil
		}
		return denied("declined", "the person answered no")
	case "decline":
		return denied("declined", "the person declined the change")
	case "cancel":
		return denied("cancelled", "the person dismissed the approval request")
	}
	return denied("declined", "unexpected answer %q to the approval request", res.Action)
}

// approvalState is what the signed request state binds: who asked, for
// which call, and when.
type approvalState struct {
	Issued    int64  `json:"t"`
	Principal string `json:"p"`
	Tool      string `json:"n"`
	Args      string `json:"a"` // sha256 of the call's arguments
	Summary   string `json:"s"` // sha256 of the summary approved
}

// roundTrip answers a 2026-07-28 client: the first round returns the
// input request; the retry carries the answer and the state, which must
// be ours (HMAC), for this principal, tool and arguments, and fresh.
func (ap *approvals) roundTrip(req *mcp.CallToolRequest, a *agent.Agent, what tools.Approval, params *mcp.ElicitParams) error {
	want := approvalState{Principal: principalKey(a, nil), Tool: req.Params.Name, Args: digest(req.Params.Arguments), Summary: digest([]byte(what.Summary))}
	resp, answered := req.Params.InputResponses[approvalInputID]
	if !answered || req.Params.RequestState == "" {
		want.Issued = ap.timing.now().UnixMilli()
		return &inputRequired{requests: mcp.InputRequestMap{approvalInputID: params}, state: ap.sign(want)}
	}
	got, err := ap.open(req.Params.RequestState)
	if err != nil {
		return denied("invalid_state", "the approval answer does not belong to this call")
	}
	issued := time.UnixMilli(got.Issued)
	got.Issued, want.Issued = 0, 0
	if got != want {
		return denied("invalid_state", "the approval answer does not belong to this call")
	}
	if ap.timing.since(issued) > ap.timeout {
		return denied("timeout", "the approval came after the %s the request stays open", ap.timeout)
	}
	res, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return denied("declined", "the answer to the approval request is not an elicitation result")
	}
	return verdict(res)
}

func digest(b []byte) string {
	sum := sha256.Sum256(bytes.TrimSpace(b))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

func (ap *approvals) sign(st approvalState) string {
	body, _ := json.Marshal(st)
	enc := base64.RawURLEncoding.EncodeToString(body)
	return enc + "." + ap.mac(enc)
}

func (ap *approvals) mac(s string) string {
	m := hmac.New(sha256.New, ap.secret)
	m.Write([]byte("parsemcp approval v1\x00" + s))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (ap *approvals) open(state string) (approvalState, error) {
	var st approvalState
	enc, sig, ok := strings.Cut(state, ".")
	if !ok || len(state) > 1024 || !hmac.Equal([]byte(sig), []byte(ap.mac(enc))) {
		return st, errors.New("bad signature")
	}
	body, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(body, &st)
}

// rearmKey carries, from the timeout guard to the approval hook, the
// context the tool's time limit was derived from and a way to start a
// fresh limit after the wait for a person.
type rearmKey struct{}

type rearmer struct {
	parent context.Context
	limit  time.Duration
	timing timing // measures limit
	// cancels collects the cancel functions of re-armed contexts; the
	// timeout guard calls them when the call ends.
	cancels *[]context.CancelFunc
}

// waitContext returns the context to wait for a person in (the tool's
// time limit does not apply; the request's cancellation does) and a
// function giving the context the tool continues with: a fresh time limit
// starting when the answer came.
func waitContext(ctx context.Context) (context.Context, func() context.Context) {
	r, ok := ctx.Value(rearmKey{}).(*rearmer)
	if !ok {
		return ctx, func() context.Context { return ctx }
	}
	return r.parent, func() context.Context {
		c, cancel := r.timing.withTimeout(r.parent, r.limit)
		*r.cancels = append(*r.cancels, cancel)
		return context.WithValue(c, rearmKey{}, r)
	}
}
