package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/auth"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/internal/testing/npmcache"
	"github.com/parsemcp/parsemcp/parse"
)

// The time rules, on tokens a real authorization server issued, read on
// a fake clock moved around their exp and iat with the DEFAULT skew: a
// JWT, and an opaque token the authorization server itself still calls
// active once the validator's clock says its exp is past (clocks differ;
// the resource server must not take "active" for "unexpired").
func TestOAuthTokenTimesRealServer(t *testing.T) {
	node, dir := npmcache.Node(t), npmcache.Dir(t, "../../interop/oauth")
	people := map[string]person{
		"parsemcp-rs":  {Secret: "rs-secret", Claims: map[string]any{}},
		"alice-jwt":    {Secret: "alice-secret", Scope: "parse:read", Claims: map[string]any{"preferred_username": "alice"}},
		"alice-opaque": {Secret: "alice-secret", Scope: "parse:read", Format: "opaque", Claims: map[string]any{"preferred_username": "alice"}},
	}
	as := startAuthServer(t, node, dir, people)
	const resource = "https://mcp.example.test/mcp"
	var clock time.Time // zero: the real clock
	v, err := auth.NewValidator(context.Background(), auth.Config{Issuer: as.issuer, Resource: resource,
		IntrospectionURL: as.issuer + "/token/introspection", ClientID: "parsemcp-rs", ClientSecret: "rs-secret",
		Now: func() time.Time {
			if clock.IsZero() {
				return time.Now()
			}
			return clock
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	skew := auth.DefaultClockSkew
	at := func(tok string, when time.Time) error {
		clock = when
		defer func() { clock = time.Time{} }()
		_, err := v.Validate(context.Background(), tok)
		if err != nil && !errors.Is(err, auth.ErrInvalidToken) {
			t.Fatalf("err = %v, want ErrInvalidToken or nil", err)
		}
		return err
	}

	jwtTok := as.token(t, "alice-jwt", "alice-secret", "parse:read", resource)
	var claims struct{ Exp, Iat int64 }
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(jwtTok, ".")[1])
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == 0 || claims.Iat == 0 {
		t.Fatalf("the JWT lacks exp or iat: %s", payload)
	}
	exp, iat := time.Unix(claims.Exp, 0), time.Unix(claims.Iat, 0)

	opaque := as.token(t, "alice-opaque", "alice-secret", "parse:read", resource)
	tok, err := v.Validate(context.Background(), opaque)
	if err != nil {
		t.Fatalf("a fresh opaque token: %v", err)
	}
	oiatSec, _ := tok.Claims["iat"].(float64)
	if tok.Expiry.IsZero() || oiatSec == 0 {
		t.Fatalf("a fresh opaque token: %+v, %v", tok, err)
	}
	oexp, oiat := tok.Expiry, time.Unix(int64(oiatSec), 0)

	for _, c := range []struct {
		name string
		tok  string
		when time.Time
		ok   bool
	}{
		{"jwt at issue", jwtTok, iat, true},
		{"jwt expired by less than the default skew", jwtTok, exp.Add(skew - time.Second), true},
		{"jwt expired by more than the default skew", jwtTok, exp.Add(skew + time.Second), false},
		{"jwt issued later than now by less than the skew", jwtTok, iat.Add(-skew + time.Second), true},
		{"jwt issued later than now by more than the skew", jwtTok, iat.Add(-skew - time.Second), false},
		{"opaque expired by less than the default skew", opaque, oexp.Add(skew - time.Second), true},
		{"opaque expired by more than the default skew", opaque, oexp.Add(skew + time.Second), false},
		{"opaque issued later than now by more than the skew", opaque, oiat.Add(-skew - time.Second), false},
	} {
		if err := at(c.tok, c.when); (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want accepted %v", c.name, err, c.ok)
		}
	}
	// All along, the authorization server calls the opaque token active.
	if !as.introspect(t, "parsemcp-rs", "rs-secret", opaque) {
		t.Fatal("the authorization server no longer calls the opaque token active; the cases above proved nothing")
	}
}

// The claims that map a token to a person, end to end through serve (the
// default clock skew, nothing configured but the issuer and the policy):
// the user claim names exactly one Parse user by email; a token whose
// email two users share, whose user or profile claim is absent, or whose
// only scope the policy does not map, is refused; the person the claims
// name gets in. Each refused token differs from the accepted one in one
// claim.
func TestOAuthClaimMappingRealServer(t *testing.T) {
	node, dir := npmcache.Node(t), npmcache.Dir(t, "../../interop/oauth")
	staff := func(email string) map[string]any {
		c := map[string]any{"groups": []string{"staff"}}
		if email != "" {
			c["email"] = email
		}
		return c
	}
	people := map[string]person{
		"parsemcp-rs":    {Secret: "rs-secret", Claims: map[string]any{}},
		"alice-mail":     {Secret: "s1", Scope: "parse:read", Claims: staff("alice@example.com")},
		"alice-opaque":   {Secret: "s1", Scope: "parse:read", Format: "opaque", Claims: staff("alice@example.com")},
		"twin-mail":      {Secret: "s2", Scope: "parse:read", Claims: staff("bob@example.com")},
		"twin-opaque":    {Secret: "s2", Scope: "parse:read", Format: "opaque", Claims: staff("bob@example.com")},
		"nobody-mail":    {Secret: "s3", Scope: "parse:read", Claims: staff("")},
		"visitor-mail":   {Secret: "s4", Scope: "parse:read", Claims: map[string]any{"email": "alice@example.com"}},
		"writeonly-mail": {Secret: "s5", Scope: "parse:write", Claims: staff("alice@example.com")},
	}
	as := startAuthServer(t, node, dir, people)
	db := filepath.Join(t.TempDir(), "twins.sqlite")
	st := fixture.Store(t, db)
	if err := st.Create(context.Background(), parse.ClassUser, []parse.Object{{"objectId": "uTwin00003", "username": "bobtwin", "email": "bob@example.com", "createdAt": "2025-01-03T00:00:00.000Z"}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	const policy = `
agents:
  people:
    permission: readonly
    identity: token
oauth:
  profile_claim: groups
  profiles:
    staff: people
  user_claim: email
  user_by: email
  scopes:
    parse:read: readonly
`
	s, resource, _ := oauthServeWith(t, as, policy, db, "oauth-introspection-url: "+as.issuer+"/token/introspection\noauth-client-id: parsemcp-rs\nverbose: true\n",
		[]string{"PARSEMCP_OAUTH_CLIENT_SECRET=rs-secret"})
	var issued []string
	tok := func(id, scope string) string {
		raw := as.token(t, id, people[id].Secret, scope, resource)
		issued = append(issued, raw)
		return raw
	}
	for _, id := range []string{"alice-mail", "alice-opaque"} {
		if resp := initializeWith(t, resource, tok(id, "parse:read")); resp.StatusCode != 200 {
			t.Fatalf("%s: %s\n%s", id, resp.Status, s.stderr)
		}
	}
	for name, raw := range map[string]string{
		"email of two users (JWT)":    tok("twin-mail", "parse:read"),
		"email of two users (opaque)": tok("twin-opaque", "parse:read"),
		"no email claim":              tok("nobody-mail", "parse:read"),
		"no groups claim":             tok("visitor-mail", "parse:read"),
		"no mapped scope":             tok("writeonly-mail", "parse:write"),
	} {
		if resp := initializeWith(t, resource, raw); resp.StatusCode != 401 {
			t.Errorf("%s: %s, want 401", name, resp.Status)
		}
	}
	log := s.stderr.String()
	if !strings.Contains(log, "not one user of the store") {
		t.Errorf("the log does not say why the twin was refused:\n%s", log)
	}
	// At -v, neither the introspection secret nor any token is logged.
	if strings.Contains(log, "rs-secret") {
		t.Errorf("the introspection secret reached the log")
	}
	for _, raw := range issued {
		if strings.Contains(log, raw[len(raw)-16:]) {
			t.Errorf("a token reached the log")
		}
	}
}
