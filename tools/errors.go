package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// The stable error codes of tool failures (the top-level error_code).
//
// The first group are the reference guide's codes, so that a client
// written against it routes parsemcp's failures the same way; the second
// are parsemcp's own, for failures the guide has no name for. A refusal's
// finer reason travels in details.kind (Kinds maps each to its code).
const (
	// CodeAccessDenied: the agent's surface excludes what the call names:
	// a class it may not see (or that does not exist: the two read the
	// same), a closed operator gate, a tenant it is not bound to, a field
	// it may not set.
	CodeAccessDenied = "access_denied"
	// CodeInvalidArgument: an argument is missing, of the wrong type or
	// out of range, or a write's values do not fit the class.
	CodeInvalidArgument = "invalid_argument"
	// CodeInvalidQuery: a where constraint, pipeline, order, keys or
	// include path does not parse or does not fit the class's schema.
	CodeInvalidQuery = "invalid_query"
	// CodePermissionDenied: the agent's tier, the class-level
	// permissions, the master key a schema change needs, or the personal
	// access token's scope refuses the call.
	CodePermissionDenied = "permission_denied"
	// CodeToolFiltered: the tool (or declared method) is outside what the
	// agent's profile offers it.
	CodeToolFiltered = "tool_filtered"
	CodeRateLimited  = "rate_limited"
	CodeTimeout      = "timeout"
	CodeCancelled    = "cancelled"
	// CodeSecurityBlocked: a guard refused to run the call as asked (a
	// full scan of a large class).
	CodeSecurityBlocked = "security_blocked"
	// CodeParseError: Parse Server refused the request with an error no
	// other code names (a Cloud Code failure, for one); its code is in
	// details.parse_code.
	CodeParseError = "parse_error"
	// CodeToolError: a tool's own failure that fits no other code; for
	// application tools (parsemcp's built-in tools do not use it).
	CodeToolError = "tool_error"
	CodeInternal  = "internal_error"

	// parsemcp's own codes.

	// CodeNotFound: the object named does not exist or is not readable
	// (or writable) by the agent; the tool named does not exist.
	CodeNotFound = "not_found"
	// CodeTooLarge: the answer does not fit the response budget.
	CodeTooLarge = "too_large"
	// CodeApprovalDenied: the user did not approve a destructive change.
	CodeApprovalDenied = "approval_denied"
	// CodeUnavailable: a dependency cannot be reached for now (the
	// database, Parse Server, a remote agent, the federation's broker,
	// the shared rate limiter): the same call may succeed later.
	CodeUnavailable = "unavailable"
	// CodeRemoteError: a remote agent's tool failed or refused the call.
	CodeRemoteError = "remote_error"
)

// Kinds maps each refusal's finer reason (details.kind) to its top-level
// code: the one place a refusal gets its code. A kind missing here is
// permission_denied.
var Kinds = map[string]string{
	"class_not_found":       CodeAccessDenied, // unknown, hidden and filtered-out classes alike
	"env_gate":              CodeAccessDenied,
	"tenant":                CodeAccessDenied,
	"tenant_spoof":          CodeAccessDenied,
	"agent_filter":          CodeAccessDenied,
	"hidden_required_field": CodeAccessDenied,
	"tool_filtered":         CodeToolFiltered,
	"method_filtered":       CodeToolFiltered,
	"operator_only":         CodeToolFiltered,
	"permission_tier":       CodePermissionDenied,
	"clp":                   CodePermissionDenied,
	"master_only":           CodePermissionDenied,
	"master_required":       CodePermissionDenied,
	"token_scope":           CodePermissionDenied,
	"token_team":            CodePermissionDenied,
	"backend":               CodePermissionDenied,
	"full_scan_refused":     CodeSecurityBlocked,
	"object_not_found":      CodeNotFound,

	// A field named against a class that the agent's view of it lacks:
	// unknown and hidden fields alike (query.DenyField).
	query.KindFieldDenied: CodeAccessDenied,
	query.KindStorageForm: CodeAccessDenied,
}

// Refusal is the Error of a refusal of the given kind: its code is the
// kind's (Kinds), details.kind the kind itself.
func Refusal(kind, msg string, details map[string]any) *Error {
	code, ok := Kinds[kind]
	if !ok {
		code = CodePermissionDenied
	}
	d := map[string]any{"kind": kind}
	for k, v := range details {
		d[k] = v
	}
	return &Error{Code: code, Message: msg, Details: d}
}

// fieldRefusal is the answer to a query naming a field the agent's view
// of the class lacks (query.DenyField built it, from the view alone: an
// unknown and a hidden field read the same).
func fieldRefusal(qe *query.Error) *Error {
	d := qe.Denied
	details := map[string]any{"denied_field": d.Field, "allowed_fields": append([]string{}, d.Allowed...)}
	if qe.Path != "" {
		details["path"] = qe.Path
	}
	if d.Rewrite != "" {
		details["suggested_rewrite"] = d.Rewrite
	}
	return Refusal(d.Kind(), qe.Error(), details)
}

// parseServerError is an error answer of Parse Server that carries its
// numeric code (store/parserest.APIError).
type parseServerError interface {
	error
	ParseCode() int
}

// RetryAfterUnavailable is the retry_after hint (seconds) of a call
// refused because the database could not be reached.
const RetryAfterUnavailable = 2

// Error is a tool failure the client sees: a stable code, a message for
// the model, and optional structured details.
type Error struct {
	Code    string         `json:"error_code"`
	Message string         `json:"error"`
	Details map[string]any `json:"details,omitempty"`
	// Internal is the underlying error, logged but never sent.
	Internal error `json:"-"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds an Error.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError maps any error a tool returns to the Error the client sees.
// Unknown errors become a sanitized internal_error.
func AsError(err error) *Error {
	var te *Error
	var qe *query.Error
	var ce *agent.ClassError
	var de *agent.DeniedError
	var ie *agent.InvalidError
	var pe *agent.PointerError
	var ps parseServerError
	switch {
	case errors.As(err, &te):
		return te
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Message: "the call ran past its time limit and was stopped; narrow the query (a where constraint, a lower limit) and try again", Internal: err}
	case errors.Is(err, context.Canceled):
		return &Error{Code: CodeCancelled, Message: "the call was cancelled", Internal: err}
	case errors.As(err, &qe) && qe.Denied != nil:
		return fieldRefusal(qe)
	case errors.As(err, &qe):
		d := map[string]any{}
		if qe.Path != "" {
			d["path"] = qe.Path
		}
		return &Error{Code: CodeInvalidQuery, Message: qe.Error(), Details: d}
	case errors.As(err, &pe):
		// A Pointer to an object the agent cannot read: the answer a get
		// of that object gives, and nothing is written.
		e := objectNotFound(pe.Class, pe.ID)
		e.Message = fmt.Sprintf("field %q: %s", pe.Field, e.Message)
		e.Details["field"] = pe.Field
		return e
	case errors.As(err, &ce):
		// One code, one message and one kind for an unknown, a hidden and
		// a filtered-out class: ce.Kind is for audit and would_permit only.
		return Refusal("class_not_found", ce.Error(), nil)
	case errors.As(err, &de):
		return Refusal(de.Kind, de.Msg, nil)
	case errors.As(err, &ie):
		return &Error{Code: CodeInvalidArgument, Message: strings.TrimPrefix(ie.Msg, store.ErrInvalid.Error()+": ")}
	case errors.Is(err, agent.ErrNotFound), errors.Is(err, store.ErrObjectNotFound):
		// Missing and not writable read the same.
		return Refusal("object_not_found", "object not found (or not writable by this agent)", nil)
	case errors.Is(err, store.ErrInvalid):
		return &Error{Code: CodeInvalidArgument, Message: strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": ")}
	case errors.Is(err, store.ErrPermissionDenied):
		return Refusal("backend", err.Error(), nil)
	case errors.Is(err, store.ErrRateLimited):
		return &Error{Code: CodeRateLimited, Message: "the Parse Server behind this server asked to slow down; try again shortly", Internal: err}
	case errors.Is(err, store.ErrUnavailable):
		return &Error{Code: CodeUnavailable, Message: "the database cannot be reached or is busy; try again shortly", Details: map[string]any{"retry_after": RetryAfterUnavailable}, Internal: err}
	case errors.Is(err, store.ErrUnsupported):
		return &Error{Code: CodeInvalidArgument, Message: err.Error()}
	case errors.As(err, &ps):
		// Parse Server's own words (its errors are meant for clients),
		// never the wrapping text, which may name the server.
		return &Error{Code: CodeParseError, Message: ps.Error(), Details: map[string]any{"parse_code": ps.ParseCode()}, Internal: err}
	}
	return &Error{Code: CodeInternal, Message: "internal error", Internal: err}
}
