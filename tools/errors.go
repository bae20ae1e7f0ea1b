package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// The stable error codes of tool failures.
const (
	CodeInvalidArgument  = "invalid_argument"
	CodeNotFound         = "not_found"
	CodePermissionDenied = "permission_denied"
	CodeAccessDenied     = "access_denied"
	CodeToolFiltered     = "tool_filtered"
	CodeTimeout          = "timeout"
	CodeCancelled        = "cancelled"
	CodeTooLarge         = "too_large"
	CodeRateLimited      = "rate_limited"
	CodeApprovalDenied   = "approval_denied"
	// CodeUnavailable: a dependency cannot be reached for now (the
	// database, Parse Server, a remote agent, the federation's broker):
	// the same call may succeed later.
	CodeUnavailable = "unavailable"
	// CodeRemoteError: a remote agent's tool failed or refused the call.
	CodeRemoteError = "remote_error"
	CodeInternal    = "internal_error"
)

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
	switch {
	case errors.As(err, &te):
		return te
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Message: "the call ran past its time limit and was stopped; narrow the query (a where constraint, a lower limit) and try again", Internal: err}
	case errors.Is(err, context.Canceled):
		return &Error{Code: CodeCancelled, Message: "the call was cancelled", Internal: err}
	case errors.As(err, &qe):
		d := map[string]any{}
		if qe.Path != "" {
			d["path"] = qe.Path
		}
		return &Error{Code: CodeInvalidArgument, Message: qe.Error(), Details: d}
	case errors.As(err, &pe):
		// A Pointer to an object the agent cannot read: the answer a get
		// of that object gives, and nothing is written.
		e := objectNotFound(pe.Class, pe.ID)
		e.Message = fmt.Sprintf("field %q: %s", pe.Field, e.Message)
		e.Details["field"] = pe.Field
		return e
	case errors.As(err, &ce):
		// One message and one kind for an unknown, a hidden and a
		// filtered-out class: ce.Kind is for audit and would_permit only.
		return &Error{Code: CodeNotFound, Message: ce.Error(), Details: map[string]any{"kind": "class_not_found"}}
	case errors.As(err, &de):
		return &Error{Code: CodePermissionDenied, Message: de.Msg, Details: map[string]any{"kind": de.Kind}}
	case errors.As(err, &ie):
		return &Error{Code: CodeInvalidArgument, Message: strings.TrimPrefix(ie.Msg, store.ErrInvalid.Error()+": ")}
	case errors.Is(err, agent.ErrNotFound):
		// Missing and not writable read the same.
		return &Error{Code: CodeNotFound, Message: "object not found (or not writable by this agent)", Details: map[string]any{"kind": "object_not_found"}}
	case errors.Is(err, store.ErrInvalid):
		return &Error{Code: CodeInvalidArgument, Message: strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": ")}
	case errors.Is(err, store.ErrObjectNotFound):
		return &Error{Code: CodeNotFound, Message: "object not found (or not writable by this agent)", Details: map[string]any{"kind": "object_not_found"}}
	case errors.Is(err, store.ErrPermissionDenied):
		return &Error{Code: CodePermissionDenied, Message: err.Error(), Details: map[string]any{"kind": "backend"}}
	case errors.Is(err, store.ErrRateLimited):
		return &Error{Code: CodeRateLimited, Message: "the Parse Server behind this server asked to slow down; try again shortly", Internal: err}
	case errors.Is(err, store.ErrUnavailable):
		return &Error{Code: CodeUnavailable, Message: "the database cannot be reached or is busy; try again shortly", Details: map[string]any{"retry_after": RetryAfterUnavailable}, Internal: err}
	case errors.Is(err, store.ErrUnsupported):
		return &Error{Code: CodeInvalidArgument, Message: err.Error()}
	}
	return &Error{Code: CodeInternal, Message: "internal error", Internal: err}
}

// decodeArgs strictly decodes a tool's arguments into T: unknown
// arguments and wrong types are invalid_argument errors naming the argument.
func decodeArgs[T any](raw json.RawMessage) (T, error) {
	var v T
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		var ute *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &ute):
			return v, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q must be %s, got a JSON %s", ute.Field, jsonKind(ute.Type.Kind().String()), ute.Value), Details: map[string]any{"argument": ute.Field}}
		case errors.As(err, &se):
			return v, Errorf(CodeInvalidArgument, "arguments are not valid JSON: %v", err)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return v, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("unknown argument %q", name), Details: map[string]any{"argument": name}}
		}
		return v, Errorf(CodeInvalidArgument, "invalid arguments: %v", err)
	}
	return v, nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return goKind
}
