package agent

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// MaxRoleDepth bounds how far role inheritance is followed.
const MaxRoleDepth = 20

// Roles returns the names of the roles userID holds: the roles whose
// `users` relation holds the user, and, transitively, every role whose
// `roles` relation holds one of those (Parse's role inheritance: a role's
// users get the permissions of the roles that include it).
func Roles(ctx context.Context, st store.Store, userID string) ([]string, error) {
	if !parse.ValidObjectID(userID) {
		return nil, fmt.Errorf("invalid user id %q", userID)
	}
	direct := query.RelationHas{Field: "users", Class: parse.ClassRole, IDs: []any{userID}}
	rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: parse.ClassRole, Where: direct, Limit: -1, Keys: []string{"name"}})
	if err != nil {
		return nil, fmt.Errorf("resolve roles: %w", err)
	}
	names := map[string]bool{}
	seen := map[string]bool{}
	var frontier []any
	add := func(rows []parse.Object) {
		for _, r := range rows {
			id, _ := r[parse.FieldObjectID].(string)
			if seen[id] {
				continue
			}
			seen[id] = true
			frontier = append(frontier, id)
			if n, ok := r["name"].(string); ok && n != "" {
				names[n] = true
			}
		}
	}
	add(rows)
	for depth := 0; len(frontier) > 0 && depth < MaxRoleDepth; depth++ {
		parents := query.RelationHas{Field: "roles", Class: parse.ClassRole, IDs: frontier}
		frontier = nil
		rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: parse.ClassRole, Where: parents, Limit: -1, Keys: []string{"name"}})
		if err != nil {
			return nil, fmt.Errorf("resolve inherited roles: %w", err)
		}
		add(rows)
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// UserIdentity is the identity of a user, with its roles resolved.
func UserIdentity(ctx context.Context, st store.Store, userID string) (Identity, error) {
	users, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: parse.ClassUser, Limit: 1, Keys: []string{},
		Where: query.Cmp{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Op: query.OpEq, Value: userID}})
	if err != nil {
		return Identity{}, err
	}
	if len(users) == 0 {
		return Identity{}, fmt.Errorf("%w: no user %q", ErrUnauthorized, userID)
	}
	roles, err := Roles(ctx, st, userID)
	if err != nil {
		return Identity{}, err
	}
	return Identity{Mode: AuthUser, UserID: userID, Roles: roles}, nil
}

// SessionIdentity validates a Parse session token against `_Session` (it
// must exist and not be expired) and returns its user's identity. Any
// failure is ErrUnauthorized; the token never appears in the error.
func SessionIdentity(ctx context.Context, st store.Store, token string, now time.Time) (Identity, error) {
	if token == "" || len(token) > 256 {
		return Identity{}, fmt.Errorf("%w: invalid session token", ErrUnauthorized)
	}
	rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: parse.ClassSession, Limit: 1, Keys: []string{"user", "expiresAt"},
		Where: query.Cmp{Path: query.Path{Field: "sessionToken", Type: parse.TypeString}, Op: query.OpEq, Value: token}})
	if err != nil {
		return Identity{}, err
	}
	if len(rows) == 0 {
		return Identity{}, fmt.Errorf("%w: invalid session token", ErrUnauthorized)
	}
	if exp, ok := parse.DateValue(rows[0]["expiresAt"]); ok && !exp.After(now) {
		return Identity{}, fmt.Errorf("%w: session expired", ErrUnauthorized)
	}
	_, userID, ok := parse.PointerID(rows[0]["user"])
	if !ok {
		return Identity{}, fmt.Errorf("%w: session has no user", ErrUnauthorized)
	}
	return UserIdentity(ctx, st, userID)
}
