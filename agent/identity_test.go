package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

func TestRolesAndSessions(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "demo.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := demo.Generate(ctx, st, demo.Options{Rows: 1500}); err != nil {
		t.Fatal(err)
	}
	// The demo's role graph: Manager.roles = [Admin]; Support.roles and
	// Sales.roles = [Manager]; every org role's roles = [Admin]. So an Admin
	// inherits everything; a Support user only Support.
	for user, want := range map[string][]string{
		demo.AdminUserID:   {"Admin", "Manager", "Sales", "Support", "org-acme", "org-globex", "org-initech"},
		demo.SupportUserID: {"Support", "org-acme"},
		demo.MemberUserID:  {"org-acme"},
		demo.NoRoleUserID:  {},
	} {
		got, err := agent.Roles(ctx, st, user)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("roles of %s = %v, want %v", user, got, want)
		}
	}

	// A cycle in the role graph terminates.
	if err := st.Create(ctx, parse.ClassRole, []parse.Object{{"objectId": "cycA", "name": "A"}, {"objectId": "cycB", "name": "B"}}); err != nil {
		t.Fatal(err)
	}
	_ = st.AddRelation(ctx, parse.ClassRole, "users", "cycA", []string{demo.NoRoleUserID})
	_ = st.AddRelation(ctx, parse.ClassRole, "roles", "cycA", []string{"cycB"})
	_ = st.AddRelation(ctx, parse.ClassRole, "roles", "cycB", []string{"cycA"})
	if got, err := agent.Roles(ctx, st, demo.NoRoleUserID); err != nil || !slices.Equal(got, []string{"A", "B"}) {
		t.Fatalf("cyclic roles: %v %v", got, err)
	}

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := st.Create(ctx, parse.ClassSession, []parse.Object{
		{"sessionToken": "r:good", "user": parse.Pointer(parse.ClassUser, demo.MemberUserID), "expiresAt": parse.Date(now.Add(time.Hour))},
		{"sessionToken": "r:old", "user": parse.Pointer(parse.ClassUser, demo.MemberUserID), "expiresAt": parse.Date(now.Add(-time.Hour))},
		{"sessionToken": "r:ghost", "user": parse.Pointer(parse.ClassUser, "nosuchuser")},
	}); err != nil {
		t.Fatal(err)
	}
	id, err := agent.SessionIdentity(ctx, st, "r:good", now)
	if err != nil || id.Mode != agent.AuthUser || id.UserID != demo.MemberUserID || !slices.Equal(id.Roles, []string{"org-acme"}) {
		t.Fatalf("valid session: %+v %v", id, err)
	}
	for _, tok := range []string{"r:old", "r:ghost", "r:unknown", "", "r:good' OR '1'='1"} {
		if _, err := agent.SessionIdentity(ctx, st, tok, now); !errors.Is(err, agent.ErrUnauthorized) {
			t.Errorf("token %q: want ErrUnauthorized, got %v", tok, err)
		}
	}
}
