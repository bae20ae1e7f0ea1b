package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/internal/testing/freeport"
	"github.com/parsemcp/parsemcp/internal/testing/npmcache"
)

// authServer is a real OAuth authorization server (npm oidc-provider,
// interop/oauth/as.mjs) run by the test.
type authServer struct{ issuer string }

// person is one client of the authorization server: its tokens carry claims.
type person struct {
	Secret string         `json:"secret"`
	Scope  string         `json:"scope,omitempty"`
	Claims map[string]any `json:"claims"`
	Format string         `json:"format,omitempty"` // of its access tokens: jwt (default) or opaque
	TTL    int            `json:"ttl,omitempty"`    // of its access tokens, in seconds (default 600)
}

func startAuthServer(t *testing.T, node, dir string, people map[string]person) *authServer {
	t.Helper()
	arg, _ := json.Marshal(people)
	cmd := exec.Command(node, "as.mjs", string(arg))
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		io.Copy(io.Discard, out)
	}()
	var as authServer
	select {
	case l := <-line:
		if err := json.Unmarshal([]byte(l), &as); err != nil || as.issuer == "" {
			var m map[string]string
			json.Unmarshal([]byte(l), &m)
			as.issuer = m["issuer"]
		}
	case <-time.After(60 * time.Second): // bounds a hang only
		t.Fatal("the authorization server did not start")
	}
	if as.issuer == "" {
		t.Fatal("the authorization server printed no issuer")
	}
	return &as
}

// token gets an access token straight from the token endpoint.
func (as *authServer) token(t *testing.T, client, secret, scope, resource string) string {
	t.Helper()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	as.post(t, "/token", client, secret, url.Values{"grant_type": {"client_credentials"}, "scope": {scope}, "resource": {resource}}, &body)
	if body.AccessToken == "" {
		t.Fatal("token endpoint: no access token")
	}
	return body.AccessToken
}

// post sends a form to the authorization server as the client id/secret
// (HTTP Basic) and decodes its JSON answer into out (nil: discard).
func (as *authServer) post(t *testing.T, path, id, secret string, form url.Values, out any) {
	t.Helper()
	req, _ := http.NewRequest("POST", as.issuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s", path, resp.Status)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

const oauthTestPolicy = `
agents:
  people:
    permission: readonly
    identity: token
oauth:
  profile_claim: groups
  profiles:
    staff: people
  user_claim: preferred_username
  user_by: username
  scopes:
    parse:read: readonly
`

// oauthServe starts serve as a resource server of as, configured by a
// config file alone (plus extra lines, and env): the fixture database, the
// OAuth test policy, JSON logs. It returns the server, its resource URI and
// its origin.
func oauthServe(t *testing.T, as *authServer, extra string, env []string) (*server, string, string) {
	t.Helper()
	return oauthServeWith(t, as, oauthTestPolicy, fixtureDB(t), extra, env)
}

// oauthServeWith is oauthServe with another policy and database.
func oauthServeWith(t *testing.T, as *authServer, policy, db, extra string, env []string) (*server, string, string) {
	t.Helper()
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	resource := base + "/mcp"
	tmp := t.TempDir()
	pol := filepath.Join(tmp, "policy.yaml")
	os.WriteFile(pol, []byte(policy), 0o600)
	cfg := filepath.Join(tmp, "parsemcp.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`store: sqlite:%s
addr: 127.0.0.1:%d
policy: %s
oauth-issuer: %s
oauth-resource: %s
oauth-scopes: [parse:read]
log-format: json
`, db, port, pol, as.issuer, resource)+extra), 0o600)
	s := startServe(t, env, "--config", cfg)
	if s.url != resource {
		t.Fatalf("serving %s, want %s", s.url, resource)
	}
	return s, resource, base
}

// sdkClient runs the TypeScript SDK client (interop/oauth/client.mjs) as
// the person of client id and returns its report.
func sdkClient(t *testing.T, node, dir, resource, id string, p person, issuer string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", resource, id, p.Secret, p.Scope, issuer)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	var r map[string]any
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s: %v: %s", id, err, out)
	}
	return r
}

// initializeWith sends an initialize request with the bearer token tok.
func initializeWith(t *testing.T, resource, tok string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// The TypeScript SDK client signs in at a real authorization server and
// calls tools as two different people, who see different rows, against a
// serve configured by a config file alone; tokens that map to nobody, or
// have expired, are for another resource, from another issuer, unsigned or
// tampered with, are refused.
func TestOAuthSignIn(t *testing.T) {
	node, dir := npmcache.Node(t), npmcache.Dir(t, "../../interop/oauth")
	people := map[string]person{
		"alice-app":   {Secret: "alice-secret", Scope: "parse:read", Claims: map[string]any{"preferred_username": "alice", "groups": []string{"staff"}}},
		"bob-app":     {Secret: "bob-secret", Scope: "parse:read", Claims: map[string]any{"preferred_username": "bob", "groups": []string{"staff"}}},
		"visitor-app": {Secret: "visitor-secret", Scope: "parse:read", Claims: map[string]any{"preferred_username": "alice", "groups": []string{"visitors"}}},
		"mallory-app": {Secret: "mallory-secret", Scope: "parse:read", Claims: map[string]any{"preferred_username": "mallory", "groups": []string{"staff"}}},
		"brief-app":   {Secret: "brief-secret", Scope: "parse:read", TTL: 1, Claims: map[string]any{"preferred_username": "alice", "groups": []string{"staff"}}},
	}
	as := startAuthServer(t, node, dir, people)
	other := startAuthServer(t, node, dir, people) // another issuer, other keys

	col := newCollector(t)
	s, resource, base := oauthServe(t, as, "oauth-clock-skew: 1s\n", col.env())
	// No token: 401 pointing to the metadata, which names the issuer.
	resp, err := http.Post(resource, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	md := base + "/.well-known/oauth-protected-resource/mcp"
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+md+`"`) {
		t.Fatalf("no token: %s, WWW-Authenticate %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if resp, err = http.Get(md); err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if meta.Resource != resource || !slices.Equal(meta.AuthorizationServers, []string{as.issuer}) {
		t.Fatalf("metadata: %+v", meta)
	}

	client := func(id string) map[string]any { return sdkClient(t, node, dir, resource, id, people[id], as.issuer) }
	alice, bob := client("alice-app"), client("bob-app")
	if alice["error"] != nil || fmt.Sprint(alice["projects"]) != "[Apollo]" || alice["count"] != 1.0 {
		t.Errorf("alice sees %v", alice)
	}
	if bob["error"] != nil || fmt.Sprint(bob["projects"]) != "[Apollo Borealis]" || bob["count"] != 2.0 {
		t.Errorf("bob sees %v", bob)
	}
	if alice["tokenAudience"] != resource {
		t.Errorf("token audience %v, want %s", alice["tokenAudience"], resource)
	}
	for _, id := range []string{"visitor-app", "mallory-app"} {
		if r := client(id); r["error"] == nil {
			t.Errorf("%s (maps to no agent or no user) got in: %v", id, r)
		}
	}

	good := as.token(t, "alice-app", "alice-secret", "parse:read", resource)
	parts := strings.Split(good, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), `"alice"`, `"bob"`, 1))) + "." + parts[2]
	unsigned := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"at+jwt"}`)) + "." + parts[1] + "."
	// A one-second token is used once its expiry and the one-second skew
	// have passed on the clock the server reads too.
	expired := as.token(t, "brief-app", "brief-secret", "parse:read", resource)
	var claims struct {
		Exp int64 `json:"exp"`
	}
	payload, _ = base64.RawURLEncoding.DecodeString(strings.Split(expired, ".")[1])
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == 0 {
		t.Fatalf("the short token has no exp: %s", payload)
	}
	time.Sleep(time.Until(time.Unix(claims.Exp, 0).Add(2 * time.Second)))
	refused := map[string]string{
		"expired":        expired,
		"wrong audience": as.token(t, "alice-app", "alice-secret", "parse:read", "http://127.0.0.1:1/mcp"),
		"wrong issuer":   other.token(t, "alice-app", "alice-secret", "parse:read", resource),
		"tampered":       tampered,
		"unsigned":       unsigned,
		"opaque":         "not-a-jwt",
	}
	call := func(tok string) *http.Response { return initializeWith(t, resource, tok) }
	if resp := call(good); resp.StatusCode != 200 {
		t.Fatalf("a good token: %s\n%s", resp.Status, s.stderr)
	}
	for name, tok := range refused {
		if resp := call(tok); resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("%s token: %s %q", name, resp.Status, resp.Header.Get("WWW-Authenticate"))
		}
	}
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
	// Each person's calls were traced, under the policy profile the
	// token chose.
	spans, raw := col.snapshot()
	calls := 0
	for _, sp := range spans {
		if sp.Name == "guard chain" && attr(sp, "parsemcp.agent.profile") == "people" {
			calls++
		}
	}
	if calls != 4 {
		t.Errorf("%d traced tool calls of profile people, want 4 (two per person)", calls)
	}
	if strings.Contains(string(raw), good[len(good)-20:]) {
		t.Errorf("a token reached the spans")
	}
	for _, tok := range append([]string{good}, refused["wrong issuer"]) {
		if strings.Contains(s.stderr.String(), tok[len(tok)-20:]) {
			t.Errorf("a token reached the log")
		}
	}
}
