package federation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/store/sqlite"
)

func tokenStores(t *testing.T) map[string]TokenStore {
	ctx := context.Background()
	st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "tokens.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	inStore, err := NewStoreTokens(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	inFile, err := NewFileTokens(filepath.Join(t.TempDir(), "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]TokenStore{"store": inStore, "file": inFile}
}

func TestTokensVerifyAndRevoke(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for name, ts := range tokenStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tok, bearer, err := NewToken(Token{Name: "ci bot", Scope: ScopeRead, Team: "acme", User: "u1"}, now)
			must(t, err)
			must(t, ts.Add(ctx, tok))
			short, shortBearer, err := NewToken(Token{Name: "short", Scope: ScopeWrite, ExpiresAt: now.Add(time.Hour)}, now)
			must(t, err)
			must(t, ts.Add(ctx, short))
			if !strings.HasPrefix(bearer, TokenPrefix) || strings.Contains(tok.Hash, bearer[len(bearer)-43:]) {
				t.Fatalf("bearer %q / hash %q", bearer, tok.Hash)
			}
			got, err := Verify(ctx, ts, bearer, now)
			if err != nil || got.ID != tok.ID || got.Scope != ScopeRead || got.Team != "acme" || got.User != "u1" {
				t.Fatalf("verify = %+v, %v", got, err)
			}
			// Forgeries and malformed tokens all read the same.
			other := bearer[:len(bearer)-1] + string("AB"[strings.IndexByte("AB", bearer[len(bearer)-1])+1&1])
			for _, bad := range []string{other, "pmcp_", "pmcp_" + tok.ID, "pmcp_" + tok.ID + "_short", "Bearer " + bearer, bearer + "x", "pmcp_AAAAAAAAAA_" + bearer[len(bearer)-43:]} {
				if _, err := Verify(ctx, ts, bad, now); !errors.Is(err, ErrBadToken) {
					t.Errorf("Verify(%q) = %v, want ErrBadToken", bad, err)
				}
			}
			// Expiry.
			if _, err := Verify(ctx, ts, shortBearer, now.Add(time.Hour)); !errors.Is(err, ErrBadToken) {
				t.Errorf("an expired token verified: %v", err)
			}
			// Revocation.
			must(t, ts.Revoke(ctx, tok.ID, now.Add(time.Minute)))
			if _, err := Verify(ctx, ts, bearer, now.Add(2*time.Minute)); !errors.Is(err, ErrBadToken) {
				t.Errorf("a revoked token verified: %v", err)
			}
			list, err := ts.List(ctx)
			must(t, err)
			status := map[string]string{}
			for _, l := range list {
				status[l.ID] = l.Status(now.Add(2 * time.Hour))
			}
			if len(list) != 2 || status[tok.ID] != "revoked" || status[short.ID] != "expired" {
				t.Fatalf("list = %+v", list)
			}
			if err := ts.Revoke(ctx, "nope123456", now); !errors.Is(err, ErrTokenNotFound) {
				t.Errorf("revoke unknown = %v", err)
			}
		})
	}
}

func TestTokenFileSeesOtherWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	server, err := NewFileTokens(path)
	must(t, err)
	cli, err := NewFileTokens(path)
	must(t, err)
	ctx := context.Background()
	now := time.Now()
	tok, bearer, err := NewToken(Token{Name: "x", Scope: ScopeWrite}, now)
	must(t, err)
	must(t, cli.Add(ctx, tok))
	if _, err := Verify(ctx, server, bearer, now); err != nil {
		t.Fatalf("the server does not see a token added by another process: %v", err)
	}
	must(t, cli.Revoke(ctx, tok.ID, now))
	if _, err := Verify(ctx, server, bearer, now); !errors.Is(err, ErrBadToken) {
		t.Fatalf("the server does not see a revocation by another process: %v", err)
	}
	fi, err := os.Stat(path)
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", fi.Mode().Perm())
	}
	must(t, os.Chmod(path, 0o644))
	if _, err := NewFileTokens(path); err == nil {
		t.Fatal("a world-readable token file was accepted")
	}
}
