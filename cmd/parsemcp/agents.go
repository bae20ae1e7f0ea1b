package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/policy"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/tools"
)

// The agents a server built from the store flags serves: from the policy
// file, or the flags' one identity.

// loadPolicy reads --policy ("demo" is the built-in demo policy) and checks
// it against the store. It returns nil when no policy is configured.
func (f *storeFlags) loadPolicy(ctx context.Context, log *slog.Logger, st store.Store) (*policy.Policy, error) {
	if f.policy == "" {
		if f.agentName != "" {
			return nil, fmt.Errorf("--agent needs --policy")
		}
		return nil, nil
	}
	if f.asUser != "" || len(f.asRoles) > 0 || f.anonymous || f.permission != "readonly" {
		return nil, fmt.Errorf("with --policy, identities and permissions come from the policy's agent profiles: drop --as-user, --as-role, --anonymous and --permission")
	}
	var pol *policy.Policy
	var err error
	if f.policy == "demo" {
		pol, err = policy.Demo()
	} else {
		var known []string
		for _, t := range tools.NewRegistry().List() {
			known = append(known, t.Name)
		}
		pol, err = policy.Load(f.policy, policy.Options{KnownTools: known})
	}
	if err != nil {
		return nil, err
	}
	if err := pol.Validate(ctx, st); err != nil {
		return nil, fmt.Errorf("policy %s: %w", f.policy, err)
	}
	if err := checkPolicyIdentities(st, pol); err != nil {
		return nil, fmt.Errorf("policy %s: %w", f.policy, err)
	}
	for _, w := range pol.Warnings {
		log.Warn("policy", "warning", w)
	}
	if f.agentName != "" && pol.Profile(f.agentName) == nil {
		return nil, fmt.Errorf("--agent %q: no such profile in the policy (have %v)", f.agentName, pol.Names())
	}
	for _, name := range pol.Names() {
		if !f.inProcess && pol.Profile(name).Identity.Kind == policy.IdentityMaster {
			log.Warn("agent profile acts with the master key: every row of every visible class, ACLs ignored", "profile", name)
		}
	}
	log.Info("policy loaded", "policy", f.policy, "agents", pol.Names(), "default_agent", pol.DefaultAgent)
	return pol, nil
}

// unauthenticated reports whether a loaded policy serves requests that
// carry no bearer token.
func (f *storeFlags) unauthenticated() bool {
	return f.pol != nil && (f.agentName != "" || f.pol.DefaultAgent != "")
}

// policyFactory builds each request's agent from the policy: a bearer
// token selects its profile; without one, --agent or the policy's
// default_agent applies (over stdio there are no headers at all).
func (f *storeFlags) policyFactory(pol *policy.Policy, st store.Store) mcpserver.AgentFactory {
	return func(ctx context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
		name := f.agentName
		if r.Header != nil && (r.Header.Get("Authorization") != "" || name == "") {
			var err error
			if name, err = pol.Select(r.Header); err != nil {
				return nil, err
			}
		}
		if name == "" {
			name = pol.DefaultAgent
		}
		if name == "" {
			return nil, fmt.Errorf("%w: no agent profile: pass --agent or set settings.default_agent", agent.ErrUnauthorized)
		}
		return pol.Agent(ctx, name, st, r.Header)
	}
}

func (f *storeFlags) agentFactory(ctx context.Context, log *slog.Logger, st store.Store) (mcpserver.AgentFactory, error) {
	perm, err := agent.ParsePermission(f.permission)
	if err != nil {
		return nil, err
	}
	var id agent.Identity
	switch {
	case f.anonymous:
		if f.asUser != "" || len(f.asRoles) > 0 {
			return nil, fmt.Errorf("--anonymous cannot be combined with --as-user or --as-role")
		}
		id = agent.Identity{Mode: agent.AuthAnonymous}
	case f.asUser != "":
		if id, err = agent.UserIdentity(ctx, st, f.asUser); err != nil {
			return nil, fmt.Errorf("--as-user: %w", err)
		}
		for _, r := range f.asRoles {
			if !slices.Contains(id.Roles, r) {
				id.Roles = append(id.Roles, r)
			}
		}
		log.Info("agents act as a user", "user", id.UserID, "roles", id.Roles)
	case len(f.asRoles) > 0:
		id = agent.Identity{Mode: agent.AuthRole, Roles: f.asRoles}
	default:
		id = agent.Identity{Mode: agent.AuthMaster}
		if !f.inProcess {
			log.Warn("agents act with the master key: every row is visible; use --as-user, --as-role or --anonymous to apply Parse ACLs", "permission", perm)
		}
	}
	if err := checkIdentity(st, id); err != nil {
		return nil, err
	}
	return func(ctx context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
		if tok := r.Header.Get(SessionHeader); tok != "" {
			sid, err := agent.SessionIdentity(ctx, st, tok, time.Now())
			if err != nil {
				return nil, err
			}
			return agent.New(perm, sid), nil
		}
		return agent.New(perm, id), nil
	}, nil
}
