package federation

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/parsemcp/parsemcp/internal/shape"
)

// TokenPrefix starts every personal access token, so a bearer token is
// recognisable as one (and secret scanners can find leaked ones).
const TokenPrefix = "pmcp_"

// The token scopes.
const (
	ScopeRead  = "read"
	ScopeWrite = "write"
)

// Token is a personal access token as stored: its secret is kept only as
// a SHA-256 hash (the secret is 256 random bits, so a fast hash is
// enough).
type Token struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Scope is "read" (only tools annotated read-only, of either source)
	// or "write".
	Scope string `json:"scope"`
	// Team, when set, confines the token to remote agents of that team.
	Team string `json:"team,omitempty"`
	// User is the Parse _User objectId the token acts as (ACLs apply),
	// when set.
	User string `json:"user,omitempty"`
	// Agent is the policy profile the token acts as, when set.
	Agent     string    `json:"agent,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	Hash      string    `json:"hash"`
}

// Status is "active", "revoked" or "expired" at now.
func (t *Token) Status(now time.Time) string {
	switch {
	case !t.RevokedAt.IsZero():
		return "revoked"
	case !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt):
		return "expired"
	}
	return "active"
}

// Errors of tokens.
var (
	// ErrBadToken is a bearer token that is malformed, unknown, revoked or
	// expired; the four read the same to the caller.
	ErrBadToken      = errors.New("invalid, revoked or expired personal access token")
	ErrTokenNotFound = errors.New("no such token")
	// ErrReadOnlyStore is returned when the store cannot hold tokens.
	ErrReadOnlyStore = errors.New("the store is read-only: keep tokens in a file (--tokens FILE)")
)

// validTokenID reports whether id has a token id's shape: what
// ^[A-Za-z0-9]{10}$ matches.
func validTokenID(id string) bool { return shape.Run(id, shape.Alnum, 10, 10) }

// validTokenName reports whether name is 1 to 100 letters, digits (any
// script: Unicode's L and N categories), spaces or . _ @ : -: what
// ^[\pL\pN _.@:-]{1,100}$ matches. That regexp compiled into 100 copies of
// the Unicode tables, 2 MB of heap held from start-up.
func validTokenName(name string) bool {
	n := 0
	for _, r := range name { // an invalid byte is U+FFFD, neither L nor N
		n++
		if n > 100 || !(unicode.IsLetter(r) || unicode.IsNumber(r) || strings.ContainsRune(" _.@:-", r)) {
			return false
		}
	}
	return n > 0
}

// NewToken checks t's fields, gives it an id, a creation time and the hash
// of a new secret, and returns it with the bearer token to hand out (shown
// once, never stored).
func NewToken(t Token, now time.Time) (Token, string, error) {
	if !validTokenName(t.Name) {
		return Token{}, "", fmt.Errorf("token name %q: use 1-100 letters, digits, spaces or . _ @ : -", t.Name)
	}
	switch t.Scope {
	case ScopeRead, ScopeWrite:
	case "":
		t.Scope = ScopeRead
	default:
		return Token{}, "", fmt.Errorf("token scope %q: use read or write", t.Scope)
	}
	if t.Team != "" && !validLiteral(t.Team) {
		return Token{}, "", fmt.Errorf("team %q: use 1-64 letters, digits, underscores or hyphens", t.Team)
	}
	if !t.ExpiresAt.IsZero() && !t.ExpiresAt.After(now) {
		return Token{}, "", fmt.Errorf("token expiry %s is in the past", t.ExpiresAt.Format(time.RFC3339))
	}
	t.ID = randomAlnum(10)
	t.CreatedAt = now.UTC().Truncate(time.Millisecond)
	t.RevokedAt = time.Time{}
	var b [32]byte
	_, _ = rand.Read(b[:])
	secret := base64.RawURLEncoding.EncodeToString(b[:])
	t.Hash = hashSecret(secret)
	return t, TokenPrefix + t.ID + "_" + secret, nil
}

// IsToken reports whether bearer has the shape of a personal access token.
func IsToken(bearer string) bool { return strings.HasPrefix(bearer, TokenPrefix) }

// splitToken reads the id and secret of a bearer token.
func splitToken(bearer string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(bearer, TokenPrefix)
	if !ok {
		return "", "", false
	}
	id, secret, ok = strings.Cut(rest, "_")
	if !ok || !validTokenID(id) || len(secret) != 43 {
		return "", "", false
	}
	return id, secret, true
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// check verifies secret against t at now.
func (t *Token) check(secret string, now time.Time) error {
	want, err := hex.DecodeString(t.Hash)
	got := sha256.Sum256([]byte(secret))
	if err != nil || subtle.ConstantTimeCompare(want, got[:]) != 1 || t.Status(now) != "active" {
		return ErrBadToken
	}
	return nil
}

func randomAlnum(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// TokenStore keeps personal access tokens: StoreTokens in the store's
// master-only _AccessToken class, FileTokens in a JSON file (for a
// read-only store).
type TokenStore interface {
	// Add stores a token made by NewToken.
	Add(ctx context.Context, t Token) error
	// List returns every token, newest first.
	List(ctx context.Context) ([]Token, error)
	// Get returns one token by id.
	Get(ctx context.Context, id string) (Token, error)
	// Revoke marks a token revoked at now.
	Revoke(ctx context.Context, id string, now time.Time) error
}

// Verify authenticates a bearer token against ts: it must be well formed,
// known, unrevoked, unexpired and match its hash. Every failure is
// ErrBadToken (a store failure is returned as is).
func Verify(ctx context.Context, ts TokenStore, bearer string, now time.Time) (Token, error) {
	id, secret, ok := splitToken(bearer)
	if !ok {
		return Token{}, ErrBadToken
	}
	t, err := ts.Get(ctx, id)
	if errors.Is(err, ErrTokenNotFound) {
		return Token{}, ErrBadToken
	}
	if err != nil {
		return Token{}, err
	}
	if err := t.check(secret, now); err != nil {
		return Token{}, err
	}
	return t, nil
}
