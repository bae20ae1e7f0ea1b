package auth_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/parsemcp/parsemcp/auth"
)

// edgeNow is the validator's (fake) clock in the edge tests: years after
// the real clock, so a rule checked against time.Now instead would let
// the expired tokens through.
var edgeNow = time.Unix(1_900_000_000, 0)

// claimsAt are the claims of a good access token at edgeNow.
func claimsAt(is *issuer) map[string]any {
	return map[string]any{
		"iss": is.srv.URL, "aud": []string{resource}, "sub": "alice",
		"iat": edgeNow.Add(-time.Minute), "exp": edgeNow.Add(10 * time.Minute),
		"scope": "parse:read",
	}
}

// edit returns c with set applied; a nil value deletes the claim.
func edit(c map[string]any, set map[string]any) map[string]any {
	out := maps.Clone(c)
	for k, v := range set {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// signClaims signs exactly these claims with the issuer's key.
func (is *issuer) signClaims(t *testing.T, claims map[string]any) string {
	t.Helper()
	b := jwt.NewBuilder()
	for k, v := range claims {
		b.Claim(k, v)
	}
	return is.sign(t, b)
}

// introspectionAnswer is what the introspection endpoint says about a
// token: active, with these claims (times as Unix seconds).
func introspectionAnswer(claims map[string]any) map[string]any {
	out := map[string]any{"active": true}
	for k, v := range claims {
		if tm, ok := v.(time.Time); ok {
			v = tm.Unix()
		}
		if l, ok := v.([]string); ok && k == "aud" && len(l) == 1 {
			v = l[0]
		}
		out[k] = v
	}
	return out
}

// Every claim the validator rules on, absent, wrong, and on either side
// of the clock skew (the default one and a configured one), for JWTs and
// for opaque tokens whose introspection answer the authorization server
// still calls active. The validator reads a fake clock.
func TestTokenEdges(t *testing.T) {
	is := newIssuer(t)
	validators := map[string]*auth.Validator{}
	validatorFor := func(skew time.Duration, audiences ...string) *auth.Validator {
		key := fmt.Sprint(skew, audiences)
		if v := validators[key]; v != nil {
			return v
		}
		v, err := auth.NewValidator(context.Background(), auth.Config{Issuer: is.srv.URL, Resource: resource, Audiences: audiences,
			ClockSkew: skew, Now: func() time.Time { return edgeNow },
			IntrospectionURL: is.srv.URL + "/introspect", ClientID: "rs", ClientSecret: "rs-secret"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(v.Close)
		validators[key] = v
		return v
	}
	good := claimsAt(is)
	def := auth.DefaultClockSkew
	if def != 30*time.Second {
		t.Fatalf("DefaultClockSkew = %s; the table below is written for 30s (docs/OPERATIONS.md says so too)", def)
	}
	sec := time.Second
	type tc struct {
		set       map[string]any
		skew      time.Duration // 0: the default
		audiences []string
		ok        bool
		check     func(t *testing.T, tok *auth.Token)
	}
	cases := map[string]tc{
		"good":                      {ok: true},
		"iss absent":                {set: map[string]any{"iss": nil}},
		"iss wrong":                 {set: map[string]any{"iss": "https://evil.example"}},
		"iss with a trailing slash": {set: map[string]any{"iss": is.srv.URL + "/"}},
		"aud absent":                {set: map[string]any{"aud": nil}},
		"aud wrong":                 {set: map[string]any{"aud": []string{"https://else.example/mcp"}}},
		"aud empty":                 {set: map[string]any{"aud": []string{}}},
		"aud another path":          {set: map[string]any{"aud": []string{resource + "/x"}}},
		"aud among others":          {set: map[string]any{"aud": []string{"https://else.example/mcp", resource}}, ok: true},
		"aud an accepted extra":     {set: map[string]any{"aud": []string{"api://parse"}}, audiences: []string{"api://parse"}, ok: true},
		"aud extra not configured":  {set: map[string]any{"aud": []string{"api://parse"}}},
		"exp absent":                {set: map[string]any{"exp": nil}},
		"exp just ahead":            {set: map[string]any{"exp": edgeNow.Add(sec)}, ok: true},
		"exp passed by less than the default skew": {set: map[string]any{"exp": edgeNow.Add(-def + sec)}, ok: true},
		"exp passed by more than the default skew": {set: map[string]any{"exp": edgeNow.Add(-def - sec)}},
		"exp passed by an hour":                    {set: map[string]any{"exp": edgeNow.Add(-time.Hour)}},
		"exp passed by less than a 5m skew":        {set: map[string]any{"exp": edgeNow.Add(-5*time.Minute + sec)}, skew: 5 * time.Minute, ok: true},
		"exp passed by more than a 5m skew":        {set: map[string]any{"exp": edgeNow.Add(-5*time.Minute - sec)}, skew: 5 * time.Minute},
		"exp passed by more than a 1s skew":        {set: map[string]any{"exp": edgeNow.Add(-2 * sec)}, skew: sec},
		"nbf ahead by less than the skew":          {set: map[string]any{"nbf": edgeNow.Add(def - sec)}, ok: true},
		"nbf ahead by more than the skew":          {set: map[string]any{"nbf": edgeNow.Add(def + sec)}},
		"nbf ahead by more than a 1s skew":         {set: map[string]any{"nbf": edgeNow.Add(2 * sec)}, skew: sec},
		"nbf passed":                               {set: map[string]any{"nbf": edgeNow.Add(-time.Minute)}, ok: true},
		"iat ahead by less than the skew":          {set: map[string]any{"iat": edgeNow.Add(def - sec)}, ok: true},
		"iat ahead by more than the skew":          {set: map[string]any{"iat": edgeNow.Add(def + sec)}},
		"iat absent":                               {set: map[string]any{"iat": nil}, ok: true},
		// Who the token speaks for is the policy's mapping
		// (policy.TestAgentForTokenEdges): the validator passes sub and
		// scope on as they are.
		"sub absent": {set: map[string]any{"sub": nil}, ok: true, check: func(t *testing.T, tok *auth.Token) {
			if tok.Subject != "" {
				t.Errorf("subject %q", tok.Subject)
			}
		}},
		"scope absent": {set: map[string]any{"scope": nil}, ok: true, check: func(t *testing.T, tok *auth.Token) {
			if len(tok.Scopes) != 0 {
				t.Errorf("scopes %v from no scope claim", tok.Scopes)
			}
		}},
		"scope list in scp": {set: map[string]any{"scope": nil, "scp": []string{"parse:read", "parse:write"}}, ok: true, check: func(t *testing.T, tok *auth.Token) {
			if !slices.Equal(tok.Scopes, []string{"parse:read", "parse:write"}) {
				t.Errorf("scopes %v", tok.Scopes)
			}
		}},
	}
	// Only an introspection answer can say these.
	introspectionOnly := map[string]tc{
		"not active":                 {set: map[string]any{"active": false}},
		"active absent":              {set: map[string]any{"active": nil}},
		"active as text":             {set: map[string]any{"active": "true"}},
		"exp absent (RFC 7662)":      {set: map[string]any{"exp": nil}, ok: true},
		"iss absent (RFC 7662)":      {set: map[string]any{"iss": nil}, ok: true},
		"aud as text":                {set: map[string]any{"aud": resource}, ok: true},
		"exp not a number":           {set: map[string]any{"exp": "tomorrow"}},
		"nbf not a number":           {set: map[string]any{"nbf": "now"}},
		"iat not a number":           {set: map[string]any{"iat": "now"}},
		"exp passed, active, 2h ago": {set: map[string]any{"exp": edgeNow.Add(-2 * time.Hour).Unix()}},
	}
	for name, c := range cases {
		for _, form := range []string{"jwt", "opaque"} {
			if form == "opaque" && (name == "iss absent" || name == "exp absent") {
				continue // optional in an introspection answer: introspectionOnly
			}
			run := c
			t.Run(form+"/"+name, func(t *testing.T) {
				runEdge(t, is, form, good, run.set, validatorFor(run.skew, run.audiences...), run.ok, run.check)
			})
		}
	}
	// A JWT whose exp is not a number (signed as raw JSON: the builder
	// refuses to make one).
	t.Run("jwt/exp not a number", func(t *testing.T) {
		payload := fmt.Sprintf(`{"iss":%q,"aud":%q,"sub":"alice","exp":"tomorrow"}`, is.srv.URL, resource)
		signed, err := jws.Sign([]byte(payload), jws.WithKey(jwa.ES256(), is.key))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := validatorFor(0).Validate(context.Background(), string(signed)); !errors.Is(err, auth.ErrInvalidToken) {
			t.Fatalf("err = %v, want ErrInvalidToken", err)
		}
	})
	for name, c := range introspectionOnly {
		run := c
		t.Run("opaque/"+name, func(t *testing.T) {
			runEdge(t, is, "opaque", good, run.set, validatorFor(run.skew, run.audiences...), run.ok, run.check)
		})
	}
}

func runEdge(t *testing.T, is *issuer, form string, good, set map[string]any, v *auth.Validator, ok bool, check func(*testing.T, *auth.Token)) {
	var raw string
	if form == "jwt" {
		raw = is.signClaims(t, edit(good, set))
	} else {
		raw = "opaque-" + strings.ReplaceAll(t.Name(), "/", "-")
		answer := introspectionAnswer(edit(good, nil))
		for k, v := range set {
			if tm, isTime := v.(time.Time); isTime {
				v = tm.Unix()
			}
			if v == nil {
				delete(answer, k)
			} else {
				answer[k] = v
			}
		}
		is.answers.Store(raw, answer)
	}
	tok, err := v.Validate(context.Background(), raw)
	switch {
	case ok && err != nil:
		t.Fatalf("refused: %v", err)
	case !ok && err == nil:
		t.Fatalf("accepted: %+v", tok)
	case !ok && !errors.Is(err, auth.ErrInvalidToken):
		t.Fatalf("err = %v, want ErrInvalidToken", err)
	}
	if ok && check != nil {
		check(t, tok)
	}
	if _, touched := set["sub"]; ok && !touched && tok.Subject != "alice" {
		t.Errorf("subject %q, want alice", tok.Subject)
	}
}
