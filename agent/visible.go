package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Visibility decides, in memory, whether one row of a class is among the
// rows the scope's agent counts and lists: the same class-level rules,
// row filters, tenant scope and ACL as count_objects, evaluated on the row
// itself. Live notifications use it to tell a subscriber about a change
// only when the subscriber could see the row before or after it.
type Visibility struct {
	class string
	op    parse.Op
	where query.Expr
	// acl is the agent's read-ACL restriction.
	acl    query.ACLFilter
	master bool
	// matchable is nil when where can be evaluated in memory.
	matchable error
}

// Visibility builds the class's visibility rule for the scope's agent. A
// class the agent cannot count (hidden, filtered out, CLP) is the error
// Count would give.
func (s *Scope) Visibility(ctx context.Context, class string) (*Visibility, error) {
	return s.VisibilityFor(ctx, class, parse.OpCount)
}

// VisibilityFor is Visibility for the rows an operation reaches: OpCount
// (what count_objects counts) or OpFind (what a find lists, e.g. a
// class's samples). CLP may allow one and not the other, or restrict them
// differently.
func (s *Scope) VisibilityFor(ctx context.Context, class string, op parse.Op) (*Visibility, error) {
	where, err := s.govern(ctx, class, op, false, nil)
	if err != nil {
		return nil, err
	}
	p := s.principal()
	return &Visibility{class: class, op: op, where: where, acl: s.readACL(), master: p.Master, matchable: query.Matchable(where)}, nil
}

// Key identifies the rule: two Visibilities with equal Keys decide every
// row alike in Sees (the class, the operation, the governed where, the
// read-ACL entries and the master flag are all it depends on). The live
// server evaluates one rule per Key instead of one per subscriber. Two
// equal rules may still get different Keys (a where holding pointers);
// never the reverse. ReachesID is not covered: it governs again when
// called, with the agent's policy and the schema as they are then.
func (v *Visibility) Key() string {
	return fmt.Sprintf("%s\x00%s\x00%t\x00%s\x00%#v", v.class, v.op, v.master, v.acl, v.where)
}

// Op is the operation whose rows the rule describes (OpCount or OpFind).
func (v *Visibility) Op() parse.Op { return v.op }

// InMemory reports whether Sees can decide without the database; when it
// cannot (the rule needs a sub-query), Sees refuses every row: callers
// fail closed or ask the database (Scope.ReachesID).
func (v *Visibility) InMemory() bool { return v.matchable == nil }

// Sees reports whether obj (a row in REST form with its "ACL", as the
// change feed gives it) is visible. A nil obj is not. The error wraps
// query.ErrNotMatchable when the rule cannot be evaluated in memory.
func (v *Visibility) Sees(obj parse.Object) (bool, error) {
	if obj == nil {
		return false, nil
	}
	if v.matchable != nil {
		return false, v.matchable
	}
	if rperm, _ := parse.PermsOf(obj[parse.FieldACL]); !v.acl.Admits(rperm) {
		return false, nil
	}
	return query.Match(v.where, obj)
}

// ReachesID reports whether the object id of class is among the rows op
// (OpCount or OpFind) reaches for the agent now, asking the database: the
// fallback of a VisibilityFor(class, op) that cannot decide in memory.
func (s *Scope) ReachesID(ctx context.Context, class, id string, op parse.Op) (bool, error) {
	q := &query.Query{Class: class, Where: query.Cmp{Path: query.Path{Field: "objectId", Type: parse.TypeString}, Op: query.OpEq, Value: id}}
	var found bool
	var err error
	if op == parse.OpFind {
		q.Limit, q.Keys = 1, []string{"objectId"}
		var rows []parse.Object
		rows, err = s.Find(ctx, q)
		found = len(rows) > 0
	} else {
		var n int64
		n, err = s.Count(ctx, q)
		found = n > 0
	}
	if err != nil {
		var ce *ClassError
		if errors.As(err, &ce) {
			return false, nil
		}
		return false, err
	}
	return found, nil
}
