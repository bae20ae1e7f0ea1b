package store

import (
	"context"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// The change feed: stores that can tell which rows changed publish each
// committed change to their watchers (docs/CHANGEFEED.md).

// ChangeOp is what a Change did.
type ChangeOp string

// The operations of a Change.
const (
	ChangeCreate ChangeOp = "create"
	ChangeUpdate ChangeOp = "update"
	ChangeDelete ChangeOp = "delete"
	// ChangeResync: changes may have been missed (a reconnect, a write by
	// another process that could not be read back); Class "" means every
	// class.
	ChangeResync ChangeOp = "resync"
)

// Change is one committed change of one object.
type Change struct {
	// ID is unique and stable for one committed change across processes
	// when the backend can give one (PostgreSQL: "pg:" and the change
	// log's sequence number), for deduplication; "" when there is none.
	ID       string
	Op       ChangeOp
	Class    string
	ObjectID string
	// Before is the row before the change, in the REST JSON form Find
	// returns, including "ACL" and every field (raw, ungoverned); nil on
	// create, resync, or when the backend cannot know it.
	Before parse.Object
	// After is the row after the change; nil on delete and resync.
	After parse.Object
	Time  time.Time
}

// Feed is implemented by stores that publish their committed changes.
type Feed interface {
	// Watch calls fn, in commit order, for every change committed after
	// Watch returns, until cancel is called. fn runs on the feed's
	// goroutine and must not block for long. Safe for concurrent use;
	// several watchers may be registered.
	//
	// Every watcher receives the same Change values: fn must not modify
	// Before or After (copy them first).
	Watch(fn func(Change)) (cancel func())
}

// FeedReach says which changes a Feed reports.
type FeedReach int

// The reaches of a Feed.
const (
	// FeedNone: nothing can be reported: the change feed is not installed
	// and this store may not write either (a read-only role).
	FeedNone FeedReach = iota
	// FeedOwnWrites: only the writes made through this store are reported
	// (the change feed is not installed).
	FeedOwnWrites
	// FeedAll: every committed change, by any client.
	FeedAll
)

// FeedScoped is implemented by a Feed that may not report every change.
type FeedScoped interface {
	// FeedReach says what Watch reports now; below FeedAll, the error
	// says why (it wraps ErrFeedNotInstalled).
	FeedReach(ctx context.Context) (FeedReach, error)
}

// CredentialFeed is implemented by stores whose backend filters change
// events by each subscriber's own credential (Parse LiveQuery): a
// subscriber's changes of a class come through a subscription made with
// its credential, instead of through Feed, which reports every change
// for the governed layer to filter.
type CredentialFeed interface {
	// WatchClass calls fn with the changes of class the identity of
	// readACL may read (query.NoACLFilter: every change, with the master
	// key), until cancel is called; a ChangeResync says changes may have
	// been missed. It returns once the subscription is in place, or with
	// why it cannot be: an identity the backend cannot subscribe as (the
	// error wraps ErrPermissionDenied), a class it does not follow
	// (ErrUnsupported), or a backend it cannot reach (ErrUnavailable). fn
	// runs on the feed's goroutine and must not block for long.
	WatchClass(ctx context.Context, class string, readACL query.ACLFilter, fn func(Change)) (cancel func(), err error)
}
