package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/auth"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/policy"
	"github.com/parsemcp/parsemcp/store"
)

// oauthFlags make serve an OAuth 2.1 protected resource (docs/OPERATIONS.md).
type oauthFlags struct {
	cfg auth.Config
}

func (o *oauthFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&o.cfg.Issuer, "oauth-issuer", "", "accept OAuth access tokens from this authorization server (its issuer URL); the policy's oauth section maps their claims to profiles and Parse users; static keys keep working")
	fl.StringVar(&o.cfg.Resource, "oauth-resource", "", "this server's resource URI as clients reach it, e.g. https://mcp.example.com/mcp: tokens must be issued for it (audience)")
	fl.StringSliceVar(&o.cfg.Audiences, "oauth-audience", nil, "more audiences accepted besides --oauth-resource")
	fl.StringVar(&o.cfg.JWKSURL, "oauth-jwks-url", "", "the issuer's key set (default: its jwks_uri, read from its metadata)")
	fl.DurationVar(&o.cfg.ClockSkew, "oauth-clock-skew", auth.DefaultClockSkew, "tolerance on the tokens' expiry and not-before times")
	fl.StringVar(&o.cfg.IntrospectionURL, "oauth-introspection-url", "", "check opaque (non-JWT) tokens at this RFC 7662 endpoint")
	fl.StringVar(&o.cfg.ClientID, "oauth-client-id", "", "this server's client id at the introspection endpoint")
	fl.StringVar(&o.cfg.ClientSecret, "oauth-client-secret", "", "this server's client secret at the introspection endpoint (prefer env PARSEMCP_OAUTH_CLIENT_SECRET)")
	fl.StringSliceVar(&o.cfg.ScopesSupported, "oauth-scopes", nil, "scopes advertised in the protected-resource metadata (e.g. parse:read,parse:write)")
}

func (o *oauthFlags) enabled() bool { return o != nil && (o.cfg.Issuer != "" || o.cfg.Resource != "") }

// factory puts OAuth in front of inner: a bearer token that inner (the
// policy's static keys) refuses is validated as an access token and mapped
// by the policy.
func (o *oauthFlags) factory(ctx context.Context, log *slog.Logger, pol *policy.Policy, st store.Store, inner mcpserver.AgentFactory) (mcpserver.AgentFactory, func(), error) {
	if pol == nil || pol.OAuth == nil {
		return nil, nil, fmt.Errorf("--oauth-issuer needs --policy with an oauth section (docs/POLICY.md)")
	}
	v, err := auth.NewValidator(ctx, o.cfg)
	if err != nil {
		return nil, nil, err
	}
	log.Info("OAuth access tokens accepted", "issuer", redact(o.cfg.Issuer), "resource", redact(o.cfg.Resource), "metadata", redact(o.cfg.MetadataURL()))
	return func(ctx context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
		a, err := inner(ctx, r)
		if err == nil || !errors.Is(err, agent.ErrUnauthorized) || r.Header == nil {
			return a, err
		}
		scheme, tok, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		tok = strings.TrimSpace(tok)
		if !strings.EqualFold(scheme, "Bearer") || tok == "" || len(tok) > 16<<10 {
			return nil, err
		}
		t, verr := v.Validate(ctx, tok)
		if verr != nil {
			log.InfoContext(ctx, "access token refused", "reason", verr)
			if errors.Is(verr, auth.ErrInvalidToken) {
				return nil, fmt.Errorf("%w: %v", agent.ErrUnauthorized, verr)
			}
			return nil, verr
		}
		a, err = pol.AgentForToken(ctx, t.Claims, t.Scopes, st)
		if err != nil {
			log.InfoContext(ctx, "access token maps to no agent", "sub", t.Subject, "reason", err)
			return nil, err
		}
		return a, nil
	}, v.Close, nil
}
