package agent

import (
	"context"
	"fmt"

	"github.com/parsemcp/parsemcp/store"
)

// FollowsPerCredential reports whether st's change feed is filtered per
// subscriber credential (store.CredentialFeed): live subscriptions then
// watch each class with the subscriber's own credential (WatchClass)
// rather than the store-wide feed.
func FollowsPerCredential(st store.Store) bool {
	_, ok := st.(store.CredentialFeed)
	return ok
}

// WatchClass subscribes to class's changes with the agent's own
// credential, on a store whose feed is filtered per credential
// (store.CredentialFeed): the agent's read ACL, and the session it came
// with (NewScope binds it), are what the backend filters the changes by.
// The governed rules on top (tenant scope, filters, class-level
// permissions) are the caller's to apply (Visibility). An identity the
// backend cannot subscribe as is refused, never widened.
func (s *Scope) WatchClass(ctx context.Context, class string, fn func(store.Change)) (cancel func(), err error) {
	cf, ok := s.st.(store.CredentialFeed)
	if !ok {
		return nil, fmt.Errorf("%w: this store has no per-credential change feed", store.ErrUnsupported)
	}
	return cf.WatchClass(ctx, class, s.readACL(), fn)
}
