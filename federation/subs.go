package federation

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultSubscriptionTTL is how long an unused response subscription is
// kept (each reuse extends it).
const DefaultSubscriptionTTL = 24 * time.Hour

// DefaultMaxSubscriptions bounds the response subscriptions held at once.
const DefaultMaxSubscriptions = 10000

// subscriptions is the in-process LRU of response subscriptions, one per
// active (user, session, entity): never a wildcard. An entry lives for a
// TTL extended on each reuse; when it expires or the LRU overflows, it is
// unsubscribed on the broker. A topic being unsubscribed is subscribed
// again only once the unsubscribe is done, so the two never cross.
type subscriptions struct {
	ttl time.Duration
	now func() time.Time
	sub func(ctx context.Context, topic string) error
	uns func(topic string)

	mu      sync.Mutex
	lru     *simplelru.LRU[string, *subEntry]
	leaving map[string]chan struct{} // topics whose unsubscribe runs
	evicted []string                 // filled by onEvict under mu

	subscribes, unsubscribes atomic.Int64
}

type subEntry struct {
	expires time.Time
	ready   chan struct{} // closed once the broker confirmed the subscription
	err     error
}

func newSubscriptions(size int, ttl time.Duration, now func() time.Time, sub func(context.Context, string) error, uns func(string)) *subscriptions {
	s := &subscriptions{ttl: ttl, now: now, sub: sub, uns: uns, leaving: map[string]chan struct{}{}}
	s.lru, _ = simplelru.NewLRU[string, *subEntry](size, func(topic string, _ *subEntry) {
		s.evicted = append(s.evicted, topic)
	})
	return s
}

// acquire makes sure topic is subscribed, reusing (and extending) a held
// subscription, and subscribing on the broker only when none is held.
func (s *subscriptions) acquire(ctx context.Context, topic string) error {
	for {
		s.mu.Lock()
		s.expireLocked()
		if e, ok := s.lru.Get(topic); ok {
			e.expires = s.now().Add(s.ttl)
			s.mu.Unlock()
			s.flush()
			select {
			case <-e.ready:
			case <-ctx.Done():
				return ctx.Err()
			}
			if e.err != nil {
				continue // the subscribe failed and the entry is gone: try again
			}
			return nil
		}
		if wait, ok := s.leaving[topic]; ok {
			s.mu.Unlock()
			s.flush()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		e := &subEntry{expires: s.now().Add(s.ttl), ready: make(chan struct{})}
		s.lru.Add(topic, e)
		s.mu.Unlock()
		s.flush()
		s.subscribes.Add(1)
		err := s.sub(ctx, topic)
		if err != nil {
			s.mu.Lock()
			if cur, ok := s.lru.Peek(topic); ok && cur == e {
				s.lru.Remove(topic)
				s.evicted = s.evicted[:len(s.evicted)-1] // nothing to unsubscribe
			}
			s.mu.Unlock()
		}
		e.err = err
		close(e.ready)
		return err
	}
}

// expireLocked evicts the entries whose TTL has passed: the least
// recently used entry expires first, so the scan stops at the first live
// one.
func (s *subscriptions) expireLocked() {
	now := s.now()
	for {
		topic, e, ok := s.lru.GetOldest()
		if !ok || e.expires.After(now) {
			return
		}
		s.lru.Remove(topic)
	}
}

// expire evicts expired entries and unsubscribes them.
func (s *subscriptions) expire() {
	s.mu.Lock()
	s.expireLocked()
	s.mu.Unlock()
	s.flush()
}

// flush unsubscribes, in the background, the topics evicted so far.
func (s *subscriptions) flush() {
	s.mu.Lock()
	topics := s.evicted
	s.evicted = nil
	var todo []string
	for _, t := range topics {
		if _, busy := s.leaving[t]; busy {
			continue
		}
		s.leaving[t] = make(chan struct{})
		todo = append(todo, t)
	}
	s.mu.Unlock()
	for _, t := range todo {
		go func() {
			s.unsubscribes.Add(1)
			s.uns(t)
			s.mu.Lock()
			close(s.leaving[t])
			delete(s.leaving, t)
			s.mu.Unlock()
		}()
	}
}

// held lists the topics subscribed now (for re-subscription and tests).
func (s *subscriptions) held() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Keys()
}

// expiry returns when topic's subscription expires (zero when not held).
func (s *subscriptions) expiry(topic string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.lru.Peek(topic); ok {
		return e.expires
	}
	return time.Time{}
}

// drain waits for running unsubscribes (for Close and tests).
func (s *subscriptions) drain() {
	for {
		s.mu.Lock()
		var wait chan struct{}
		for _, c := range s.leaving {
			wait = c
			break
		}
		s.mu.Unlock()
		if wait == nil {
			return
		}
		<-wait
	}
}
