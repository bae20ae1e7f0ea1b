package parserest

import (
	"context"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

var (
	_ store.SessionBinder  = (*Store)(nil)
	_ store.CredentialFeed = (*sessionStore)(nil)
)

// WithSession returns the store acting, for calls whose ACL names userID,
// with the caller's own session token instead of one /loginAs opens: the
// token the request came with is what Parse Server sees.
func (s *Store) WithSession(userID, token string) store.Store {
	return &sessionStore{Store: s, user: userID, token: token}
}

// sessionStore is a Store bound to one caller's session.
type sessionStore struct {
	*Store
	user, token string
}

type sessionKey struct{}

type boundSession struct{ user, token string }

func (b *sessionStore) bind(ctx context.Context) context.Context {
	return context.WithValue(ctx, sessionKey{}, boundSession{b.user, b.token})
}

// boundToken is the session bound to ctx for userID, if any.
func boundToken(ctx context.Context, userID string) string {
	if b, ok := ctx.Value(sessionKey{}).(boundSession); ok && b.user == userID {
		return b.token
	}
	return ""
}

func (b *sessionStore) Find(ctx context.Context, q *query.Query) ([]parse.Object, error) {
	return b.Store.Find(b.bind(ctx), q)
}

func (b *sessionStore) Count(ctx context.Context, q *query.Query) (int64, error) {
	return b.Store.Count(b.bind(ctx), q)
}

func (b *sessionStore) Update(ctx context.Context, w store.Write, set parse.Object) (parse.Object, parse.Object, error) {
	return b.Store.Update(b.bind(ctx), w, set)
}

func (b *sessionStore) Delete(ctx context.Context, w store.Write) (parse.Object, error) {
	return b.Store.Delete(b.bind(ctx), w)
}

// WatchClass subscribes with the caller's own session.
func (b *sessionStore) WatchClass(ctx context.Context, class string, readACL query.ACLFilter, fn func(store.Change)) (func(), error) {
	return b.Store.WatchClass(b.bind(ctx), class, readACL, fn)
}

// Close does nothing: the bound view shares the store, which its owner
// closes.
func (b *sessionStore) Close() error { return nil }
