package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// TokenClass holds the tokens in the store. It is master-only (no CLP
// grants, empty ACLs) and hidden from every agent, the master key's
// included.
const TokenClass = "_AccessToken"

// StoreTokens keeps tokens in the store's _AccessToken class.
type StoreTokens struct{ st store.Store }

// NewStoreTokens creates the token class if needed. A store that refuses
// the change (a read-only role) yields an error wrapping
// ErrReadOnlyStore.
func NewStoreTokens(ctx context.Context, st store.Store) (*StoreTokens, error) {
	if _, err := st.Schema(ctx, TokenClass); err == nil {
		return &StoreTokens{st: st}, nil
	}
	sch := parse.NewSchema(TokenClass)
	for name, t := range map[string]parse.FieldType{
		"name": parse.TypeString, "scope": parse.TypeString, "team": parse.TypeString, "user": parse.TypeString,
		"agent": parse.TypeString, "hash": parse.TypeString, "expiresAt": parse.TypeDate, "revokedAt": parse.TypeDate,
	} {
		sch.Fields[name] = parse.Field{Type: t}
	}
	none := parse.OpPerm{Entries: map[string]bool{}}
	sch.CLP = parse.CLP{Get: &none, Find: &none, Count: &none, Create: &none, Update: &none, Delete: &none, AddField: &none}
	if err := st.CreateClass(ctx, sch); err != nil && !errors.Is(err, store.ErrClassExists) {
		return nil, fmt.Errorf("%w (%v)", ErrReadOnlyStore, err)
	}
	return &StoreTokens{st: st}, nil
}

func tokenObject(t Token) parse.Object {
	o := parse.Object{parse.FieldObjectID: t.ID, parse.FieldCreatedAt: parse.Date(t.CreatedAt), "name": t.Name, "scope": t.Scope, "hash": t.Hash, "ACL": map[string]any{}}
	for k, v := range map[string]string{"team": t.Team, "user": t.User, "agent": t.Agent} {
		if v != "" {
			o[k] = v
		}
	}
	if !t.ExpiresAt.IsZero() {
		o["expiresAt"] = parse.Date(t.ExpiresAt)
	}
	return o
}

func objectToken(o parse.Object) Token {
	str := func(k string) string { s, _ := o[k].(string); return s }
	date := func(k string) time.Time { d, _ := parse.DateValue(o[k]); return d }
	return Token{ID: str(parse.FieldObjectID), Name: str("name"), Scope: str("scope"), Team: str("team"), User: str("user"), Agent: str("agent"),
		Hash: str("hash"), CreatedAt: date(parse.FieldCreatedAt), ExpiresAt: date("expiresAt"), RevokedAt: date("revokedAt")}
}

// Add implements TokenStore.
func (s *StoreTokens) Add(ctx context.Context, t Token) error {
	return s.st.Create(ctx, TokenClass, []parse.Object{tokenObject(t)})
}

// List implements TokenStore.
func (s *StoreTokens) List(ctx context.Context) ([]Token, error) {
	rows, err := s.st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: TokenClass, Limit: -1, Order: []query.OrderKey{{Field: parse.FieldCreatedAt, Desc: true}}})
	if err != nil {
		return nil, err
	}
	out := make([]Token, len(rows))
	for i, r := range rows {
		out[i] = objectToken(r)
	}
	return out, nil
}

// Get implements TokenStore.
func (s *StoreTokens) Get(ctx context.Context, id string) (Token, error) {
	rows, err := s.st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: TokenClass, Limit: 1,
		Where: query.Cmp{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Op: query.OpEq, Value: id}})
	if err != nil {
		return Token{}, err
	}
	if len(rows) == 0 {
		return Token{}, ErrTokenNotFound
	}
	return objectToken(rows[0]), nil
}

// Revoke implements TokenStore.
func (s *StoreTokens) Revoke(ctx context.Context, id string, now time.Time) error {
	_, _, err := s.st.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: TokenClass, ID: id}, parse.Object{"revokedAt": parse.Date(now)})
	if errors.Is(err, store.ErrObjectNotFound) {
		return ErrTokenNotFound
	}
	return err
}

// FileTokens keeps tokens in a JSON file (mode 0600), for a store that is
// read-only. Writes replace the file atomically; reads notice changes
// made by other processes (parsemcp token revoke) by its modification
// time and size.
type FileTokens struct {
	path string

	mu     sync.Mutex
	tokens map[string]Token
	stamp  fileStamp
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// NewFileTokens opens (or, on the first Add, creates) the token file.
func NewFileTokens(path string) (*FileTokens, error) {
	f := &FileTokens{path: path}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.loadLocked(); err != nil {
		return nil, err
	}
	return f, nil
}

type tokenFile struct {
	Tokens []Token `json:"tokens"`
}

func (f *FileTokens) loadLocked() error {
	fi, err := os.Stat(f.path)
	if errors.Is(err, os.ErrNotExist) {
		f.tokens, f.stamp = map[string]Token{}, fileStamp{}
		return nil
	}
	if err != nil {
		return err
	}
	st := fileStamp{mod: fi.ModTime(), size: fi.Size()}
	if f.tokens != nil && st == f.stamp {
		return nil
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("token file %s: mode %v lets other users read it; chmod 600", f.path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return err
	}
	var tf tokenFile
	if err := json.Unmarshal(b, &tf); err != nil {
		return fmt.Errorf("token file %s: %w", f.path, err)
	}
	f.tokens = make(map[string]Token, len(tf.Tokens))
	for _, t := range tf.Tokens {
		f.tokens[t.ID] = t
	}
	f.stamp = st
	return nil
}

func (f *FileTokens) saveLocked() error {
	tf := tokenFile{Tokens: f.sortedLocked()}
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".tokens-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return err
	}
	f.tokens = nil // read back, stamp included
	return f.loadLocked()
}

func (f *FileTokens) sortedLocked() []Token {
	out := make([]Token, 0, len(f.tokens))
	for _, t := range f.tokens {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Add implements TokenStore.
func (f *FileTokens) Add(_ context.Context, t Token) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.loadLocked(); err != nil {
		return err
	}
	f.tokens[t.ID] = t
	return f.saveLocked()
}

// List implements TokenStore.
func (f *FileTokens) List(context.Context) ([]Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.loadLocked(); err != nil {
		return nil, err
	}
	return f.sortedLocked(), nil
}

// Get implements TokenStore.
func (f *FileTokens) Get(_ context.Context, id string) (Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.loadLocked(); err != nil {
		return Token{}, err
	}
	t, ok := f.tokens[id]
	if !ok {
		return Token{}, ErrTokenNotFound
	}
	return t, nil
}

// Revoke implements TokenStore.
func (f *FileTokens) Revoke(_ context.Context, id string, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.loadLocked(); err != nil {
		return err
	}
	t, ok := f.tokens[id]
	if !ok {
		return ErrTokenNotFound
	}
	t.RevokedAt = now.UTC()
	f.tokens[t.ID] = t
	return f.saveLocked()
}
