package agent

import (
	"errors"
	"testing"
)

// MayCall's layers, each refusing on its own and in its order: a call
// refused by two layers names the first.
func TestMayCall(t *testing.T) {
	read := &TokenScope{ID: "t", Team: "acme"}
	write := &TokenScope{ID: "t", Write: true, Team: "acme"}
	open := Gates{WriteTools: true, RawCRUD: true}
	reader := ToolInfo{Name: "query_class", Permission: Readonly, ReadOnly: true}
	writer := ToolInfo{Name: "create_object", Permission: Write, Gate: GateRawCRUD}
	remoteReader := ToolInfo{Name: "ops-acme-a-status", Permission: Readonly, ReadOnly: true, Remote: true, Team: "acme"}
	remoteWriter := ToolInfo{Name: "ops-acme-a-restart", Permission: Write, Remote: true, Team: "acme"}
	elsewhere := remoteReader
	elsewhere.Team = "globex"
	teamless := remoteReader
	teamless.Team = ""
	for _, tc := range []struct {
		name  string
		perm  Permission
		only  []string
		token *TokenScope
		gates Gates
		tool  ToolInfo
		kind  string // "" when allowed
	}{
		{"reader", Readonly, nil, nil, Gates{}, reader, ""},
		{"writer needs the write tier", Readonly, nil, nil, open, writer, "permission_tier"},
		{"writer outside the tool filter", Write, []string{"query_class"}, nil, open, writer, "tool_filtered"},
		{"writer, gate closed", Write, nil, nil, Gates{}, writer, "env_gate"},
		{"writer", Write, nil, nil, open, writer, ""},
		{"tier before the token", Readonly, nil, read, open, writer, "permission_tier"},
		{"filter before the token", Write, []string{"query_class"}, read, open, writer, "tool_filtered"},
		{"gate before the token", Write, nil, read, Gates{}, writer, "env_gate"},
		{"read-only token, writer", Write, nil, read, open, writer, "token_scope"},
		{"read-only token, reader", Readonly, nil, read, Gates{}, reader, ""},
		{"write token, writer", Write, nil, write, open, writer, ""},
		{"zero token is read-only", Write, nil, &TokenScope{}, open, writer, "token_scope"},
		{"team token, its team's reader", Readonly, nil, read, Gates{}, remoteReader, ""},
		{"team token, another team", Readonly, nil, read, Gates{}, elsewhere, "token_team"},
		{"team token, an agent of no team", Readonly, nil, read, Gates{}, teamless, "token_team"},
		{"the team rule is for remote tools only", Readonly, nil, read, Gates{}, reader, ""},
		{"read-only token, remote writer", Write, nil, read, Gates{}, remoteWriter, "token_scope"},
		{"write token, remote writer", Write, nil, write, Gates{}, remoteWriter, ""},
		{"no token, any team", Readonly, nil, nil, Gates{}, elsewhere, ""},
		{"remote writer needs the write tier", Readonly, nil, write, Gates{}, remoteWriter, "permission_tier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.perm, Identity{Mode: AuthMaster})
			a.Policy.Tools.Only = tc.only
			a.Token = tc.token
			err := a.MayCall(tc.tool, tc.gates)
			var de *DeniedError
			switch {
			case tc.kind == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.kind != "" && (!errors.As(err, &de) || de.Kind != tc.kind):
				t.Fatalf("got %v, want a %s refusal", err, tc.kind)
			}
		})
	}
}
