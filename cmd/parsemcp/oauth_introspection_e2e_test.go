package main

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/internal/testing/npmcache"
)

// introspect asks the authorization server itself whether tok is active,
// as the client id/secret.
func (as *authServer) introspect(t *testing.T, id, secret, tok string) bool {
	t.Helper()
	var body struct {
		Active bool `json:"active"`
	}
	as.post(t, "/token/introspection", id, secret, url.Values{"token": {tok}}, &body)
	return body.Active
}

// revoke revokes tok (RFC 7009) as the client that holds it.
func (as *authServer) revoke(t *testing.T, id, secret, tok string) {
	t.Helper()
	as.post(t, "/token/revocation", id, secret, url.Values{"token": {tok}, "token_type_hint": {"access_token"}}, nil)
}

// Opaque access tokens are checked at the authorization server's
// introspection endpoint (RFC 7662), parsemcp authenticating there as a
// client of its own whose secret comes from the environment: the
// TypeScript SDK client gets opaque tokens for two people, who see
// different rows; a revoked (inactive) token, an expired one, one issued
// for another resource, one that authorization server never issued, and
// one of a person the policy maps to no user are refused.
func TestOAuthIntrospection(t *testing.T) {
	node, dir := npmcache.Node(t), npmcache.Dir(t, "../../interop/oauth")
	staff := func(user string) map[string]any {
		return map[string]any{"preferred_username": user, "groups": []string{"staff"}}
	}
	people := map[string]person{
		"parsemcp-rs":    {Secret: "rs-secret", Claims: map[string]any{}},
		"alice-opaque":   {Secret: "alice-secret", Scope: "parse:read", Format: "opaque", Claims: staff("alice")},
		"bob-opaque":     {Secret: "bob-secret", Scope: "parse:read", Format: "opaque", Claims: staff("bob")},
		"brief-opaque":   {Secret: "brief-secret", Scope: "parse:read", Format: "opaque", TTL: 1, Claims: staff("alice")},
		"mallory-opaque": {Secret: "mallory-secret", Scope: "parse:read", Format: "opaque", Claims: staff("mallory")},
	}
	as := startAuthServer(t, node, dir, people)
	other := startAuthServer(t, node, dir, people)
	s, resource, _ := oauthServe(t, as, fmt.Sprintf("oauth-introspection-url: %s/token/introspection\noauth-client-id: parsemcp-rs\n", as.issuer),
		[]string{"PARSEMCP_OAUTH_CLIENT_SECRET=rs-secret"})

	alice := sdkClient(t, node, dir, resource, "alice-opaque", people["alice-opaque"], as.issuer)
	bob := sdkClient(t, node, dir, resource, "bob-opaque", people["bob-opaque"], as.issuer)
	if alice["error"] != nil || alice["tokenFormat"] != "opaque" || fmt.Sprint(alice["projects"]) != "[Apollo]" || alice["count"] != 1.0 {
		t.Errorf("alice sees %v", alice)
	}
	if bob["error"] != nil || bob["tokenFormat"] != "opaque" || fmt.Sprint(bob["projects"]) != "[Apollo Borealis]" || bob["count"] != 2.0 {
		t.Errorf("bob sees %v", bob)
	}

	good := as.token(t, "alice-opaque", "alice-secret", "parse:read", resource)
	if strings.Count(good, ".") == 2 {
		t.Fatalf("the authorization server issued a JWT, not an opaque token")
	}
	if resp := initializeWith(t, resource, good); resp.StatusCode != 200 {
		t.Fatalf("an active opaque token: %s\n%s", resp.Status, s.stderr)
	}

	revoked := as.token(t, "alice-opaque", "alice-secret", "parse:read", resource)
	if resp := initializeWith(t, resource, revoked); resp.StatusCode != 200 {
		t.Fatalf("before revocation: %s", resp.Status)
	}
	as.revoke(t, "alice-opaque", "alice-secret", revoked)

	// The short-lived token is used once it has expired: the authorization
	// server is asked until it says so (the deadline only bounds a hang).
	expired := as.token(t, "brief-opaque", "brief-secret", "parse:read", resource)
	for deadline := time.Now().Add(time.Minute); as.introspect(t, "parsemcp-rs", "rs-secret", expired); {
		if time.Now().After(deadline) {
			t.Fatal("the one-second token is still active after a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}

	refused := map[string]string{
		"revoked":        revoked,
		"expired":        expired,
		"wrong audience": as.token(t, "alice-opaque", "alice-secret", "parse:read", "http://127.0.0.1:1/mcp"),
		"wrong issuer":   other.token(t, "alice-opaque", "alice-secret", "parse:read", resource),
		"made up":        "opaque-token-nobody-issued",
	}
	for name, tok := range refused {
		if resp := initializeWith(t, resource, tok); resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("%s token: %s %q", name, resp.Status, resp.Header.Get("WWW-Authenticate"))
		}
	}
	if r := sdkClient(t, node, dir, resource, "mallory-opaque", people["mallory-opaque"], as.issuer); r["error"] == nil {
		t.Errorf("mallory (no user of the store) got in: %v", r)
	}
	for _, tok := range append([]string{good}, refused["revoked"], refused["wrong audience"]) {
		if strings.Contains(s.stderr.String(), tok) {
			t.Errorf("a token reached the log")
		}
	}
	if strings.Contains(s.stderr.String(), "rs-secret") {
		t.Errorf("the introspection secret reached the log")
	}
}
