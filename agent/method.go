package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// MethodRequest is one call of a declared method.
type MethodRequest struct {
	Class, Method string
	ObjectID      string
	Args          map[string]any
	DryRun        bool
	Gates         Gates
	// Confirm, when set, is asked before a destructive method runs, once
	// every check passed and (for an instance method) the object is known
	// to exist and be writable; its summary describes the effect. An error
	// refuses the call with nothing written; the context it returns is
	// the one the method runs with.
	Confirm func(ctx context.Context, summary string) (context.Context, error)
}

// ResolveMethod returns the declared method a request names, after every
// check that does not touch data: the class is accessible, the method is
// declared and passes the agent's method filter, the agent's tier reaches
// it, and the operator's gate for it is open.
func (s *Scope) ResolveMethod(ctx context.Context, r MethodRequest) (*Method, error) {
	if _, err := s.Schema(ctx, r.Class); err != nil {
		return nil, err
	}
	m := s.agent.Policy.Catalog.Method(r.Class, r.Method)
	if m == nil {
		return nil, invalid("class %s declares no method %q", r.Class, r.Method)
	}
	if !s.agent.Policy.Methods.AllowsMethod(r.Class, r.Method) {
		return nil, &DeniedError{Kind: "method_filtered", Msg: fmt.Sprintf("method %s is not available to this agent", m.QualifiedName())}
	}
	if !s.agent.Can(m.Permission) {
		return nil, &DeniedError{Kind: "permission_tier", Msg: fmt.Sprintf("method %s needs %s permission; this agent is %s", m.QualifiedName(), m.Permission, s.agent.Permission)}
	}
	if err := r.Gates.Check(MethodGate(m), "method "+m.QualifiedName()); err != nil {
		return nil, err
	}
	return m, nil
}

// CallMethod runs (or, with DryRun, previews) a declared method as the
// agent. Arguments are validated against the method's parameters; the
// class-level permission matching the method's tier is checked; update and
// create methods write through the scope, so every write rule applies. A
// dry run never writes: methods that declare supports_dry_run give their
// own preview (update and create methods show the object and the change),
// the others a structural preview of the call that would be made.
func (s *Scope) CallMethod(ctx context.Context, r MethodRequest) (any, error) {
	m, err := s.ResolveMethod(ctx, r)
	if err != nil {
		return nil, err
	}
	if m.Instance {
		if !parse.ValidObjectID(r.ObjectID) {
			return nil, invalid("method %s acts on one object: give a valid object_id", m.QualifiedName())
		}
	} else if r.ObjectID != "" {
		return nil, invalid("method %s is a class method: it takes no object_id", m.QualifiedName())
	}
	args := r.Args
	if args == nil {
		args = map[string]any{}
	}
	if m.Resolved != nil {
		if err := m.Resolved.Validate(args); err != nil {
			return nil, invalid("arguments of %s: %v", m.QualifiedName(), err)
		}
	}
	if _, err := s.govern(ctx, r.Class, MethodOp(m), true, nil); err != nil {
		return nil, err
	}
	var set map[string]any
	if m.Kind == MethodUpdate || m.Kind == MethodCreate {
		if set, err = RenderTemplate(m.Set, args); err != nil {
			return nil, invalid("method %s: %v", m.QualifiedName(), err)
		}
	}
	if r.DryRun {
		return s.previewMethod(ctx, m, r, args, set)
	}
	if m.Destructive && r.Confirm != nil {
		if ctx, err = s.confirmMethod(ctx, m, r); err != nil {
			return nil, err
		}
	}
	switch m.Kind {
	case MethodUpdate:
		obj, err := s.Update(ctx, r.Class, r.ObjectID, set)
		if err != nil {
			return nil, err
		}
		return map[string]any{"updated": obj}, nil
	case MethodCreate:
		obj, err := s.Create(ctx, r.Class, set)
		if err != nil {
			return nil, err
		}
		return map[string]any{"created": obj}, nil
	case MethodGo:
		if m.Func == nil {
			return nil, fmt.Errorf("method %s has no Go function", m.QualifiedName())
		}
		return m.Func(ctx, &MethodCall{Scope: s, Method: m, ObjectID: r.ObjectID, Args: args})
	}
	return nil, fmt.Errorf("method %s: unknown kind %q", m.QualifiedName(), m.Kind)
}

func (s *Scope) previewMethod(ctx context.Context, m *Method, r MethodRequest, args, set map[string]any) (any, error) {
	out := map[string]any{
		"dry_run":               true,
		"class_name":            m.Class,
		"method":                m.Name,
		"supports_real_dry_run": m.SupportsDryRun,
		"would_call": map[string]any{
			"class": m.Class, "method": m.Name, "instance": m.Instance,
			"object_id": r.ObjectID, "args": maps.Clone(args),
		},
	}
	if !m.SupportsDryRun {
		out["note"] = fmt.Sprintf("method %s does not declare supports_dry_run: every gate passed, but no preview of its effect was made; nothing was written", m.QualifiedName())
		return out, nil
	}
	switch m.Kind {
	case MethodUpdate:
		t, err := s.Preview(ctx, m.Class, r.ObjectID, MethodOp(m))
		if err != nil {
			return nil, err
		}
		if !t.Writable {
			return nil, fmt.Errorf("%w (or not writable by this agent)", ErrNotFound)
		}
		out["would_update"] = map[string]any{"object_id": r.ObjectID, "before": t.Before(set), "after": set}
	case MethodCreate:
		out["would_create"] = set
	case MethodGo:
		res, err := m.Func(ctx, &MethodCall{Scope: s, Method: m, ObjectID: r.ObjectID, Args: args, DryRun: true})
		if err != nil {
			return nil, err
		}
		out["result"] = res
	}
	return out, nil
}

// confirmMethod asks r.Confirm to approve a destructive method, after
// checking that its object (for an instance method) exists and is
// writable: nobody is asked about a call that would fail anyway.
func (s *Scope) confirmMethod(ctx context.Context, m *Method, r MethodRequest) (context.Context, error) {
	target := "the class " + m.Class
	if m.Instance {
		t, err := s.Preview(ctx, m.Class, r.ObjectID, MethodOp(m))
		if err != nil {
			return ctx, err
		}
		if !t.Writable {
			return ctx, ErrNotFound
		}
		target = m.Class + " " + r.ObjectID
	}
	summary := fmt.Sprintf("Run the destructive method %s on %s", m.QualifiedName(), target)
	if m.Description != "" {
		summary += " (" + strings.TrimSuffix(m.Description, ".") + ")"
	}
	if len(r.Args) > 0 {
		b, _ := json.Marshal(r.Args)
		summary += " with arguments " + string(b)
	}
	return r.Confirm(ctx, summary+".")
}
