// Package auth is the OAuth 2.1 resource-server side of the MCP
// authorization spec: the protected-resource metadata (RFC 9728) that
// tells a client which authorization server issues tokens for this
// server, the WWW-Authenticate challenge that points to it, and the
// validation of access tokens: JWTs against the issuer's JWKS (issuer,
// audience bound to this server's resource URI, expiry, clock skew) and,
// optionally, opaque tokens through token introspection (RFC 7662).
//
// What a valid token's claims may do is the policy's business
// (policy.Policy.AgentForToken); this package only says who the token
// speaks for and with which scopes.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// DefaultClockSkew is the tolerance on exp, nbf and iat.
const DefaultClockSkew = 30 * time.Second

// MetadataPath is where the protected-resource metadata is served; RFC
// 9728 also has clients try it with the resource's path appended.
const MetadataPath = "/.well-known/oauth-protected-resource"

// ErrInvalidToken wraps every refusal of a token; its text never holds
// the token.
var ErrInvalidToken = errors.New("invalid access token")

// Config describes the authorization server and this resource.
type Config struct {
	// Issuer is the authorization server's issuer identifier (the iss of
	// its tokens).
	Issuer string
	// Resource is this server's resource URI, e.g. https://mcp.example.com/mcp:
	// tokens must name it in their audience.
	Resource string
	// Audiences accepted besides Resource (for servers that cannot issue
	// resource-bound tokens); empty: Resource only.
	Audiences []string
	// JWKSURL is the issuer's key set; empty: read from its metadata
	// (/.well-known/oauth-authorization-server, then openid-configuration).
	JWKSURL string
	// ClockSkew tolerated on the token's times (DefaultClockSkew when 0).
	ClockSkew time.Duration
	// IntrospectionURL, when set, checks tokens that are not JWTs (RFC
	// 7662), authenticating as ClientID/ClientSecret.
	IntrospectionURL string
	ClientID         string
	ClientSecret     string
	// ScopesSupported are advertised in the metadata.
	ScopesSupported []string
	// HTTPClient fetches metadata, keys and introspection answers.
	HTTPClient *http.Client
	// Now is the clock the token times are checked against (time.Now
	// when nil; tests set it).
	Now func() time.Time
}

// Token is what a valid access token says.
type Token struct {
	Subject string
	Scopes  []string
	Expiry  time.Time
	// Claims holds every claim, for the policy's mapping.
	Claims map[string]any
}

// Validator checks access tokens.
type Validator struct {
	cfg   Config
	cache *jwk.Cache
	jwks  string
	stop  context.CancelFunc
}

// NewValidator reads the issuer's metadata when needed and starts
// keeping its key set fresh; Close stops that.
func NewValidator(ctx context.Context, cfg Config) (*Validator, error) {
	if cfg.Issuer == "" || cfg.Resource == "" {
		return nil, fmt.Errorf("oauth: the issuer and this server's resource URI are both required")
	}
	if u, err := url.Parse(cfg.Resource); err != nil || u.Scheme == "" || u.Host == "" || u.Fragment != "" {
		return nil, fmt.Errorf("oauth: resource %q: want an absolute URI without fragment", cfg.Resource)
	}
	if cfg.ClockSkew == 0 {
		cfg.ClockSkew = DefaultClockSkew
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Validator{cfg: cfg, jwks: cfg.JWKSURL}
	if v.jwks == "" {
		var err error
		if v.jwks, err = discoverJWKS(ctx, cfg.HTTPClient, cfg.Issuer); err != nil {
			return nil, err
		}
	}
	bg, stop := context.WithCancel(context.Background())
	cache, err := jwk.NewCache(bg, httprc.NewClient())
	if err != nil {
		stop()
		return nil, err
	}
	if err := cache.Register(ctx, v.jwks, jwk.WithHTTPClient(cfg.HTTPClient), jwk.WithMinInterval(time.Minute)); err != nil {
		stop()
		return nil, fmt.Errorf("oauth: key set %s: %w", v.jwks, err)
	}
	v.cache, v.stop = cache, stop
	return v, nil
}

// Close stops refreshing the key set.
func (v *Validator) Close() {
	if v.stop != nil {
		v.stop()
	}
}

// discoverJWKS reads jwks_uri from the issuer's metadata (RFC 8414, then
// OpenID Connect discovery).
func discoverJWKS(ctx context.Context, hc *http.Client, issuer string) (string, error) {
	base := strings.TrimSuffix(issuer, "/")
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("oauth: issuer %q: %w", issuer, err)
	}
	candidates := []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + u.Path,
		base + "/.well-known/openid-configuration",
	}
	var errs []error
	for _, c := range candidates {
		var md struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := getJSON(ctx, hc, c, &md); err != nil {
			errs = append(errs, err)
			continue
		}
		if md.Issuer != issuer {
			errs = append(errs, fmt.Errorf("%s names issuer %q, not %q", c, md.Issuer, issuer))
			continue
		}
		if md.JWKSURI == "" {
			errs = append(errs, fmt.Errorf("%s has no jwks_uri", c))
			continue
		}
		return md.JWKSURI, nil
	}
	return "", fmt.Errorf("oauth: no key set found for issuer %s: %w", issuer, errors.Join(errs...))
}

func getJSON(ctx context.Context, hc *http.Client, u string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	return json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(into)
}

// Validate checks a bearer token: a JWT signed by one of the issuer's
// keys, or an opaque token the introspection endpoint says is active.
// Refusals wrap ErrInvalidToken.
func (v *Validator) Validate(ctx context.Context, raw string) (*Token, error) {
	if strings.Count(raw, ".") == 2 {
		return v.validateJWT(ctx, raw)
	}
	if v.cfg.IntrospectionURL != "" {
		return v.introspect(ctx, raw)
	}
	return nil, fmt.Errorf("%w: not a JWT, and no introspection endpoint is configured", ErrInvalidToken)
}

func (v *Validator) audiences() []string {
	return append([]string{v.cfg.Resource}, v.cfg.Audiences...)
}

func (v *Validator) validateJWT(ctx context.Context, raw string) (*Token, error) {
	set, err := v.cache.CachedSet(v.jwks)
	if err != nil {
		return nil, fmt.Errorf("oauth: key set: %w", err)
	}
	// The signature first (alg none and unknown keys are refused), then
	// the claims.
	tok, err := jwt.Parse([]byte(raw), jwt.WithKeySet(set), jwt.WithValidate(false))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if err := jwt.Validate(tok, jwt.WithIssuer(v.cfg.Issuer), jwt.WithClock(jwt.ClockFunc(v.cfg.Now)), jwt.WithAcceptableSkew(v.cfg.ClockSkew), jwt.WithRequiredClaim("exp")); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	aud, _ := tok.Audience()
	if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(v.audiences(), a) }) {
		return nil, fmt.Errorf("%w: audience %v is not this server (%s)", ErrInvalidToken, aud, v.cfg.Resource)
	}
	claims := map[string]any{}
	for _, k := range tok.Keys() {
		var val any
		if err := tok.Get(k, &val); err == nil {
			claims[k] = val
		}
	}
	t := &Token{Claims: claims}
	t.Subject, _ = tok.Subject()
	t.Expiry, _ = tok.Expiration()
	t.Scopes = scopesOf(claims)
	return t, nil
}

// scopesOf reads the scope claim (RFC 9068: space-separated) or scp.
func scopesOf(claims map[string]any) []string {
	switch s := claims["scope"].(type) {
	case string:
		return strings.Fields(s)
	}
	if l, ok := claims["scp"].([]any); ok {
		var out []string
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// introspect asks the authorization server about an opaque token (RFC 7662).
func (v *Validator) introspect(ctx context.Context, raw string) (*Token, error) {
	form := url.Values{"token": {raw}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.cfg.IntrospectionURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(v.cfg.ClientID), url.QueryEscape(v.cfg.ClientSecret))
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauth: introspection: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("oauth: introspection: %s", resp.Status)
	}
	claims := map[string]any{}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&claims); err != nil {
		return nil, fmt.Errorf("oauth: introspection: %w", err)
	}
	if active, _ := claims["active"].(bool); !active {
		return nil, fmt.Errorf("%w: not active", ErrInvalidToken)
	}
	if iss, ok := claims["iss"].(string); ok && iss != v.cfg.Issuer {
		return nil, fmt.Errorf("%w: issuer %q", ErrInvalidToken, iss)
	}
	if !audienceMatches(claims["aud"], v.audiences()) {
		return nil, fmt.Errorf("%w: audience is not this server (%s)", ErrInvalidToken, v.cfg.Resource)
	}
	t := &Token{Claims: claims, Scopes: scopesOf(claims)}
	t.Subject, _ = claims["sub"].(string)
	if err := v.introspectedTimes(claims, &t.Expiry); err != nil {
		return nil, err
	}
	return t, nil
}

// introspectedTimes holds an introspection answer to the time rules of
// a JWT (exp, nbf, iat, the same skew and clock): an authorization server
// may still call a token active past its exp (another clock, a cache).
// The times are optional in RFC 7662; one present but not a number
// refuses the token.
func (v *Validator) introspectedTimes(claims map[string]any, expiry *time.Time) error {
	now, skew := v.cfg.Now(), v.cfg.ClockSkew
	at := func(k string) (time.Time, bool, error) {
		raw, ok := claims[k]
		if !ok {
			return time.Time{}, false, nil
		}
		n, ok := raw.(float64)
		if !ok {
			return time.Time{}, false, fmt.Errorf("%w: %s is not a number", ErrInvalidToken, k)
		}
		return time.Unix(int64(n), 0), true, nil
	}
	exp, ok, err := at("exp")
	if err != nil {
		return err
	}
	if ok {
		*expiry = exp
		if !now.Before(exp.Add(skew)) {
			return fmt.Errorf("%w: expired", ErrInvalidToken)
		}
	}
	for _, k := range []string{"nbf", "iat"} {
		t, ok, err := at(k)
		if err != nil {
			return err
		}
		if ok && now.Before(t.Add(-skew)) {
			return fmt.Errorf("%w: %s is in the future", ErrInvalidToken, k)
		}
	}
	return nil
}

func audienceMatches(aud any, want []string) bool {
	switch a := aud.(type) {
	case string:
		return slices.Contains(want, a)
	case []any:
		for _, x := range a {
			if s, ok := x.(string); ok && slices.Contains(want, s) {
				return true
			}
		}
	}
	return false
}
