package parserest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/hub"
)

// The change feed, through Parse LiveQuery (livequery.go). Subscribers of
// the governed layer subscribe per (class, credential) with WatchClass:
// Parse Server filters each subscriber's events by its own session (or
// grants them all to the master key). Watch, the store-wide feed, follows
// every class with the master key.

var (
	_ store.Feed           = (*Store)(nil)
	_ store.CredentialFeed = (*Store)(nil)
)

// FeedReadyWait bounds how long a subscription waits for LiveQuery's
// answer (and Watch for its first subscriptions).
var FeedReadyWait = 30 * time.Second

// classRefresh is how often Watch looks for new classes.
const classRefresh = 2 * time.Second

// lq returns the LiveQuery connection for master-key subscriptions or the
// one for session and anonymous ones.
func (s *Store) lq(master bool) *lqConn {
	s.lqOnce.Do(func() {
		s.lqMaster, s.lqUser = newLQConn(s, true), newLQConn(s, false)
	})
	if master {
		return s.lqMaster
	}
	return s.lqUser
}

// WatchClass implements store.CredentialFeed: one LiveQuery subscription
// per (class, credential), shared by the watchers that have the same. The
// credential is the one REST calls of readACL use (credentialFor): the
// master key for NoACLFilter, the caller's own session (WithSession) or
// one /loginAs opens for a user, none for public-only entries. It fails
// closed: an identity with no Parse equivalent (roles without a user),
// the master key when the store has none, a session LiveQuery refuses, or
// a class it will not follow is refused with the reason.
func (s *Store) WatchClass(ctx context.Context, class string, readACL query.ACLFilter, fn func(store.Change)) (func(), error) {
	if class == parse.ClassSession {
		return nil, fmt.Errorf("%w: %s is not followed (it holds credentials)", store.ErrUnsupported, class)
	}
	if _, err := s.schemas.Shared(ctx, class); err != nil {
		return nil, err
	}
	if readACL.IsSet() && readACL.IsOpen() && s.cfg.MasterKey == "" {
		return nil, fmt.Errorf("%w: a master-key subscription needs the Parse Server master key (%s)", ErrNoRESTIdentity, EnvMasterKey)
	}
	cred, err := s.credentialFor(ctx, readACL)
	if err != nil {
		return nil, err
	}
	return s.lq(cred.master).subscribe(ctx, class, cred.token, fn)
}

// Watch implements store.Feed through LiveQuery with the master key:
// every class the schema has, new ones within classRefresh. Without the
// master key there is no store-wide feed (logged once): subscribers use
// WatchClass with their own credential.
func (s *Store) Watch(fn func(store.Change)) (cancel func()) {
	f := s.startFeed()
	if f == nil {
		return func() {}
	}
	select {
	case <-f.ready:
	case <-time.After(FeedReadyWait):
		s.log.Warn("parserest: LiveQuery subscriptions not ready; changes may be missed until they are", "store", s.display)
	}
	return f.hub.Watch(fn)
}

// masterFeed is Watch's: every class followed on the master connection,
// published to a hub.
type masterFeed struct {
	s     *Store
	hub   hub.Hub
	ready chan struct{}
	ctx   context.Context
	stop  context.CancelFunc
	done  chan struct{}

	mu      sync.Mutex
	cancels map[string]func() // by class; nil once refused
}

// startFeed starts Watch's feed once (with the master key).
func (s *Store) startFeed() *masterFeed {
	s.feedOnce.Do(func() {
		if s.cfg.MasterKey == "" {
			s.log.Error("parserest: no store-wide change feed without the master key")
			return
		}
		ctx, stop := context.WithCancel(context.Background())
		f := &masterFeed{s: s, ready: make(chan struct{}), ctx: ctx, stop: stop, done: make(chan struct{}), cancels: map[string]func(){}}
		f.hub.Logger = s.log
		s.feed = f
		go f.run()
	})
	return s.feed
}

func (f *masterFeed) run() {
	defer close(f.done)
	t := time.NewTicker(classRefresh)
	defer t.Stop()
	first := true
	for {
		if err := f.follow(); err != nil && f.ctx.Err() == nil {
			f.s.log.Warn("parserest: LiveQuery subscribe", "err", err)
		}
		if first {
			first = false
			close(f.ready)
		}
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// follow subscribes the classes the schema has and the feed has not; a
// class found after the first pass gets a resync (its changes before the
// subscription were not seen).
func (f *masterFeed) follow() error {
	schemas, err := f.s.Schemas(f.ctx)
	if err != nil {
		return err
	}
	later := isClosed(f.ready)
	for _, sch := range schemas {
		class := sch.ClassName
		f.mu.Lock()
		_, known := f.cancels[class]
		f.mu.Unlock()
		if known || class == parse.ClassSession {
			continue
		}
		cancel, err := f.s.lq(true).subscribe(f.ctx, class, "", func(c store.Change) { f.hub.Publish(c) })
		if err != nil {
			if f.ctx.Err() != nil {
				return nil
			}
			f.s.log.Warn("parserest: LiveQuery does not follow a class", "class", class, "err", err)
		}
		f.mu.Lock()
		f.cancels[class] = cancel
		f.mu.Unlock()
		if err == nil && later {
			f.hub.Publish(store.Change{Op: store.ChangeResync, Class: class, Time: time.Now()})
		}
	}
	return nil
}

func (f *masterFeed) close() {
	f.stop()
	<-f.done
	f.hub.Close()
}
