package policy

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/parse"
)

// The claim that names the Parse user, at its edges: it must name exactly
// one user of the store. A claim two users match (an email shared after an
// import, say) is refused, never settled by picking one of them.
func TestAgentForTokenUserClaimEdges(t *testing.T) {
	st := fixture.Store(t, filepath.Join(t.TempDir(), "f.sqlite"))
	ctx := context.Background()
	// A second user with bob's email, created after him.
	if err := st.Create(ctx, parse.ClassUser, []parse.Object{{"objectId": "uTwin00003", "username": "bobtwin", "email": "bob@example.com", "createdAt": "2025-01-03T00:00:00.000Z"}}); err != nil {
		t.Fatal(err)
	}
	for _, by := range []string{"email", "objectId", "username"} {
		pol, err := Parse([]byte(`
agents:
  staff:
    permission: readonly
    identity: token
oauth:
  profile_claim: groups
  profiles:
    staff: staff
  user_claim: who
  user_by: `+by+`
`), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		user := map[string]string{"email": "alice@example.com", "objectId": fixture.Alice, "username": "alice"}[by]
		a, err := pol.AgentForToken(ctx, map[string]any{"who": user, "groups": "staff"}, nil, st)
		if err != nil || a.Identity.UserID != fixture.Alice {
			t.Fatalf("user_by %s: %q maps to %+v, %v; want alice", by, user, a, err)
		}
		refused := map[string]any{
			"absent":      nil,
			"empty":       "",
			"a number":    42.0,
			"a list":      []any{user},
			"nobody":      "mallory",
			"other case":  map[string]string{"email": "ALICE@example.com", "objectId": "ualice0001", "username": "Alice"}[by],
			"with spaces": " " + user + " ",
		}
		if by == "email" {
			refused["two users"] = "bob@example.com"
		}
		for name, who := range refused {
			t.Run(by+"/"+name, func(t *testing.T) {
				claims := map[string]any{"groups": "staff"}
				if who != nil {
					claims["who"] = who
				}
				a, err := pol.AgentForToken(ctx, claims, nil, st)
				if !errors.Is(err, agent.ErrUnauthorized) {
					t.Fatalf("err = %v (agent %+v), want ErrUnauthorized", err, a)
				}
			})
		}
	}
}
