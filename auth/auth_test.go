package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/parsemcp/parsemcp/auth"
)

const resource = "https://mcp.example.test/mcp"

// issuer is an authorization server's discovery document and key set.
type issuer struct {
	srv *httptest.Server
	key jwk.Key
	// answers holds introspection answers by token (string -> map[string]any),
	// consulted before the fixed ones.
	answers sync.Map
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := jwk.Import(priv)
	if err != nil {
		t.Fatal(err)
	}
	_ = key.Set(jwk.KeyIDKey, "k1")
	_ = key.Set(jwk.AlgorithmKey, jwa.ES256())
	pub, _ := key.PublicKey()
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	is := &issuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) { json.NewEncoder(w).Encode(set) })
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if id, secret, _ := r.BasicAuth(); id != "rs" || secret != "rs-secret" {
			http.Error(w, "who", http.StatusUnauthorized)
			return
		}
		if a, ok := is.answers.Load(r.Form.Get("token")); ok {
			json.NewEncoder(w).Encode(a)
			return
		}
		switch r.Form.Get("token") {
		case "opaque-good":
			json.NewEncoder(w).Encode(map[string]any{"active": true, "iss": is.srv.URL, "aud": resource, "sub": "u1", "scope": "parse:read", "exp": time.Now().Add(time.Hour).Unix()})
		case "opaque-other-aud":
			json.NewEncoder(w).Encode(map[string]any{"active": true, "iss": is.srv.URL, "aud": "https://else.example/mcp", "sub": "u1"})
		default:
			json.NewEncoder(w).Encode(map[string]any{"active": false})
		}
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) mint(t *testing.T, mod func(b *jwt.Builder)) string {
	t.Helper()
	b := jwt.NewBuilder().Issuer(is.srv.URL).Audience([]string{resource}).Subject("alice").
		IssuedAt(time.Now()).Expiration(time.Now().Add(time.Hour)).Claim("scope", "parse:read parse:write").Claim("groups", []string{"support"})
	if mod != nil {
		mod(b)
	}
	return is.sign(t, b)
}

// sign builds b's token and signs it with the issuer's key.
func (is *issuer) sign(t *testing.T, b *jwt.Builder) string {
	t.Helper()
	tok, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.ES256(), is.key))
	if err != nil {
		t.Fatal(err)
	}
	return string(signed)
}

func validator(t *testing.T, is *issuer) *auth.Validator {
	t.Helper()
	v, err := auth.NewValidator(context.Background(), auth.Config{Issuer: is.srv.URL, Resource: resource,
		IntrospectionURL: is.srv.URL + "/introspect", ClientID: "rs", ClientSecret: "rs-secret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}

func TestValidJWT(t *testing.T) {
	is := newIssuer(t)
	v := validator(t, is)
	tok, err := v.Validate(context.Background(), is.mint(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Subject != "alice" || strings.Join(tok.Scopes, " ") != "parse:read parse:write" {
		t.Errorf("token = %+v", tok)
	}
	if g, _ := tok.Claims["groups"].([]any); len(g) != 1 || g[0] != "support" {
		t.Errorf("groups claim = %#v", tok.Claims["groups"])
	}
	// Within the clock skew an expired token still passes.
	if _, err := v.Validate(context.Background(), is.mint(t, func(b *jwt.Builder) { b.Expiration(time.Now().Add(-10 * time.Second)) })); err != nil {
		t.Errorf("a token expired 10s ago (skew 30s) was refused: %v", err)
	}
}

func TestRefusedTokens(t *testing.T) {
	is := newIssuer(t)
	other := newIssuer(t) // another authorization server's key
	v := validator(t, is)
	good := is.mint(t, nil)
	parts := strings.Split(good, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), "alice", "admin", 1))) + "." + parts[2]
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	for name, tok := range map[string]string{
		"expired":          is.mint(t, func(b *jwt.Builder) { b.Expiration(time.Now().Add(-time.Hour)) }),
		"not yet valid":    is.mint(t, func(b *jwt.Builder) { b.NotBefore(time.Now().Add(time.Hour)) }),
		"no expiry":        mintNoExp(t, is),
		"wrong audience":   is.mint(t, func(b *jwt.Builder) { b.Audience([]string{"https://else.example/mcp"}) }),
		"wrong issuer":     is.mint(t, func(b *jwt.Builder) { b.Issuer("https://evil.example") }),
		"unsigned":         none,
		"tampered":         tampered,
		"foreign key":      other.mint(t, func(b *jwt.Builder) { b.Issuer(is.srv.URL) }),
		"garbage":          "a.b.c",
		"opaque inactive":  "opaque-unknown",
		"opaque other aud": "opaque-other-aud",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v.Validate(context.Background(), tok)
			if !errors.Is(err, auth.ErrInvalidToken) {
				t.Fatalf("err = %v, want ErrInvalidToken", err)
			}
			if strings.Contains(err.Error(), tok) {
				t.Errorf("the error shows the token")
			}
		})
	}
	if tok, err := v.Validate(context.Background(), "opaque-good"); err != nil || tok.Subject != "u1" {
		t.Errorf("introspected token: %+v, %v", tok, err)
	}
}

func mintNoExp(t *testing.T, is *issuer) string {
	tok, _ := jwt.NewBuilder().Issuer(is.srv.URL).Audience([]string{resource}).Subject("alice").Build()
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.ES256(), is.key))
	if err != nil {
		t.Fatal(err)
	}
	return string(signed)
}

func TestMetadataAndChallenge(t *testing.T) {
	cfg := auth.Config{Issuer: "https://as.example", Resource: resource, ScopesSupported: []string{"parse:read"}}
	if got, want := cfg.MetadataURL(), "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"; got != want {
		t.Errorf("MetadataURL = %s, want %s", got, want)
	}
	if got := cfg.Challenge(true); got != `Bearer resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp", error="invalid_token"` {
		t.Errorf("Challenge = %s", got)
	}
	rec := httptest.NewRecorder()
	cfg.MetadataHandler().ServeHTTP(rec, httptest.NewRequest("GET", auth.MetadataPath+"/mcp", nil))
	var doc map[string]any
	json.Unmarshal(rec.Body.Bytes(), &doc)
	if doc["resource"] != resource || doc["authorization_servers"].([]any)[0] != "https://as.example" {
		t.Errorf("metadata = %v", doc)
	}
	if _, err := auth.NewValidator(context.Background(), auth.Config{Issuer: "https://as.example", Resource: "/mcp"}); err == nil {
		t.Error("a relative resource URI was accepted")
	}
}
