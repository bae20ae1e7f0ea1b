package tools_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// parseServerErr stands for Parse Server's error answer (parserest.APIError).
type parseServerErr struct{ code int }

func (e parseServerErr) Error() string {
	return fmt.Sprintf("Parse Server error %d: script failed", e.code)
}
func (e parseServerErr) ParseCode() int { return e.code }

// AsError gives each failure the guide's code and keeps parsemcp's finer
// reason in details.kind.
func TestAsErrorCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want *tools.Error
	}{
		{&agent.ClassError{Class: "_Session", Kind: "hidden_class"}, &tools.Error{Code: "access_denied", Message: `class "_Session" was not found (or is not accessible to this agent)`, Details: map[string]any{"kind": "class_not_found"}}},
		{&agent.ClassError{Class: "_Session", Kind: "unknown"}, &tools.Error{Code: "access_denied", Message: `class "_Session" was not found (or is not accessible to this agent)`, Details: map[string]any{"kind": "class_not_found"}}},
		{&agent.DeniedError{Kind: "tool_filtered", Msg: "m"}, &tools.Error{Code: "tool_filtered", Message: "m", Details: map[string]any{"kind": "tool_filtered"}}},
		{&agent.DeniedError{Kind: "method_filtered", Msg: "m"}, &tools.Error{Code: "tool_filtered", Message: "m", Details: map[string]any{"kind": "method_filtered"}}},
		{&agent.DeniedError{Kind: "env_gate", Msg: "m"}, &tools.Error{Code: "access_denied", Message: "m", Details: map[string]any{"kind": "env_gate"}}},
		{&agent.DeniedError{Kind: "tenant_spoof", Msg: "m"}, &tools.Error{Code: "access_denied", Message: "m", Details: map[string]any{"kind": "tenant_spoof"}}},
		{&agent.DeniedError{Kind: "permission_tier", Msg: "m"}, &tools.Error{Code: "permission_denied", Message: "m", Details: map[string]any{"kind": "permission_tier"}}},
		{&agent.DeniedError{Kind: "clp", Msg: "m"}, &tools.Error{Code: "permission_denied", Message: "m", Details: map[string]any{"kind": "clp"}}},
		// A kind with no entry keeps the code every refusal had before.
		{&agent.DeniedError{Kind: "something_new", Msg: "m"}, &tools.Error{Code: "permission_denied", Message: "m", Details: map[string]any{"kind": "something_new"}}},
		{fmt.Errorf("reading: %w", parseServerErr{141}), &tools.Error{Code: "parse_error", Message: "Parse Server error 141: script failed", Details: map[string]any{"parse_code": 141}}},
	} {
		got := tools.AsError(c.err)
		got.Internal = nil
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%v (-want +got):\n%s", c.err, d)
		}
	}
}
