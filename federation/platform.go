package federation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/paho"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Options configures a Platform.
type Options struct {
	ConnOptions
	// CallTimeout bounds a proxied tools/call when the caller's context
	// sets no earlier deadline (default 30 s).
	CallTimeout time.Duration
	// ListTimeout bounds the fetch of an agent's tool list (default 10 s).
	ListTimeout time.Duration
	// RetryInterval is how long after a failed tool-list fetch it is
	// tried again while the agent is online (default 15 s); each further
	// failure doubles it, up to MaxRetryInterval (default 5 min).
	RetryInterval    time.Duration
	MaxRetryInterval time.Duration
	// FetchAttempts is how many failed tool-list fetches in a row make the
	// platform give up on an agent until it announces itself again
	// (default 6).
	FetchAttempts int
	// SubscriptionTTL is how long an unused response subscription is kept
	// (default 24 h); each reuse extends it.
	SubscriptionTTL time.Duration
	// MaxSubscriptions bounds the response subscriptions held (default
	// 10,000); the least recently used one is dropped first.
	MaxSubscriptions int
	// AnnotationCacheSize bounds the cached remote tool annotations
	// (default 10,000).
	AnnotationCacheSize int
	// MaxToolsPerAgent bounds the tools taken from one agent (default 500).
	MaxToolsPerAgent int
	// CheckTool, when set, is asked about every tool that passed the
	// federation's own checks, under the name clients will see; a tool it
	// refuses is left out with the reason in Warnings. The MCP server sets
	// it to what its SDK accepts (mcpserver.CheckRemoteTool).
	CheckTool func(exposedName string, t Tool) error

	// The clock (tests): now for the subscriptions and the presence rate
	// limit, afterFunc (time.AfterFunc; it returns the timer's Stop) for
	// retries and held presence messages.
	now       func() time.Time
	afterFunc func(time.Duration, func()) func() bool
}

// catalogUser and catalogSession name the topics the platform fetches
// tool lists on.
const (
	catalogUser    = "_platform"
	catalogSession = "catalog"
)

// Platform is the server side of the federation: one broker connection,
// the catalog of connected agents' tools, and the proxy of calls to them.
type Platform struct {
	o      Options
	topics Topics
	conn   *conn
	subs   *subscriptions
	ann    *lru.Cache[string, *Annotations]
	gate   *presenceGate
	cancel context.CancelFunc
	ctx    context.Context
	// listening is closed once the presence subscription was first made
	// (Ready waits for it: an announcement made before would be missed).
	listening chan struct{}

	mu       sync.Mutex
	agents   map[string]*agentState // by "type/id"
	byName   map[string]*RemoteTool
	catalog  []RemoteTool
	skipped  []string // warnings about remote tools left out of the catalog
	watchers map[int]func()
	nextW    int

	pendMu   sync.Mutex
	pending  map[string]*pendingCall
	finished *simplelru.LRU[string, struct{}] // ids of calls ended lately, to tell a late answer from a wrong one

	dropped atomic.Int64
}

// Connect starts the platform's broker connection (in the background:
// an unreachable broker is retried, and the server's own tools work
// meanwhile) and subscribes to the agents' presence.
func Connect(ctx context.Context, o Options) (*Platform, error) {
	if err := o.defaults("parsemcp-platform"); err != nil {
		return nil, err
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.ListTimeout <= 0 {
		o.ListTimeout = 10 * time.Second
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = 15 * time.Second
	}
	if o.MaxRetryInterval <= 0 {
		o.MaxRetryInterval = 5 * time.Minute
	}
	o.MaxRetryInterval = max(o.MaxRetryInterval, o.RetryInterval)
	if o.FetchAttempts <= 0 {
		o.FetchAttempts = 6
	}
	if o.SubscriptionTTL <= 0 {
		o.SubscriptionTTL = DefaultSubscriptionTTL
	}
	if o.MaxSubscriptions <= 0 {
		o.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if o.AnnotationCacheSize <= 0 {
		o.AnnotationCacheSize = 10000
	}
	if o.MaxToolsPerAgent <= 0 {
		o.MaxToolsPerAgent = 500
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.afterFunc == nil {
		o.afterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &Platform{o: o, topics: o.topics(), agents: map[string]*agentState{}, byName: map[string]*RemoteTool{},
		watchers: map[int]func(){}, pending: map[string]*pendingCall{}, cancel: cancel, ctx: ctx, listening: make(chan struct{})}
	p.gate = newPresenceGate(o.now, o.afterFunc)
	p.finished, _ = simplelru.NewLRU[string, struct{}](4096, nil)
	p.ann, _ = lru.New[string, *Annotations](o.AnnotationCacheSize)
	c, err := dial(ctx, &p.o.ConnOptions, connHooks{onMessage: p.onMessage})
	if err != nil {
		cancel()
		return nil, err
	}
	p.conn = c
	p.subs = newSubscriptions(o.MaxSubscriptions, o.SubscriptionTTL, o.now,
		func(ctx context.Context, topic string) error { return c.subscribe(ctx, topic) },
		func(topic string) {
			uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := c.unsubscribe(uctx, topic); err != nil {
				p.o.Logger.Debug("federation: unsubscribe failed", "topic", topic, "err", err)
			}
		})
	go func() {
		// The presence filter is the one wildcard the platform holds: it
		// carries announcements, never responses.
		for ctx.Err() == nil {
			if err := c.subscribe(ctx, p.topics.PresenceFilter()); err == nil {
				close(p.listening)
				break
			} else if !errors.Is(err, context.Canceled) {
				p.o.Logger.Warn("federation: subscribing to agent presence failed; retrying", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	go p.janitor()
	return p, nil
}

// janitor expires idle response subscriptions.
func (p *Platform) janitor() {
	every := min(p.o.SubscriptionTTL/4, time.Minute)
	t := time.NewTicker(max(every, time.Second))
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.subs.expire()
		}
	}
}

// Close disconnects from the broker; calls waiting for an answer fail.
func (p *Platform) Close() {
	p.cancel()
	p.conn.close()
	p.mu.Lock()
	for _, st := range p.agents {
		st.stopRetry()
	}
	p.mu.Unlock()
}

// Health reports why remote tools are unavailable: nil while the broker
// connection is up, else an error saying why it is not (the broker
// refused the platform's credentials, cannot be reached, …).
func (p *Platform) Health() error {
	if why := p.conn.health(); why != "" {
		return fmt.Errorf("%w: %s", ErrUnavailable, why)
	}
	return nil
}

// Ready waits until the broker connection is up and the platform listens
// to the agents' presence (an announcement made before it would be
// missed, unless retained).
func (p *Platform) Ready(ctx context.Context) error {
	if err := p.conn.await(ctx); err != nil {
		return err
	}
	select {
	case <-p.listening:
		return p.conn.await(ctx) // still up
	case <-ctx.Done():
		return fmt.Errorf("%w: not subscribed to the agents' presence: %v", ErrUnavailable, ctx.Err())
	}
}

// OnChange calls f (in its own goroutine's turn, never under the
// platform's lock) whenever the remote catalog or the agents' status
// changes; the returned function unsubscribes.
func (p *Platform) OnChange(f func()) func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := p.nextW
	p.nextW++
	p.watchers[id] = f
	return func() {
		p.mu.Lock()
		delete(p.watchers, id)
		p.mu.Unlock()
	}
}

func (p *Platform) notify() {
	p.mu.Lock()
	fs := make([]func(), 0, len(p.watchers))
	for _, f := range p.watchers {
		fs = append(fs, f)
	}
	p.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Stats counts what the platform did on the broker.
type Stats struct {
	// Subscribes and Unsubscribes count response subscriptions made and
	// dropped.
	Subscribes, Unsubscribes int64
	// Dropped counts incoming messages rejected: malformed, oversized,
	// on an unexpected topic, or answering no call of ours.
	Dropped int64
	// Held is the number of response subscriptions held now.
	Held int
}

// Stats returns the platform's counters.
func (p *Platform) Stats() Stats {
	return Stats{Subscribes: p.subs.subscribes.Load(), Unsubscribes: p.subs.unsubscribes.Load(), Dropped: p.dropped.Load(), Held: len(p.subs.held())}
}

func (p *Platform) drop(reason string, args ...any) {
	p.dropped.Add(1)
	p.o.Logger.Warn("federation: message dropped: "+reason, args...)
}

// onMessage routes an incoming message by topic.
func (p *Platform) onMessage(pub *paho.Publish) {
	switch {
	case strings.HasSuffix(pub.Topic, "/res"):
		p.onResponse(pub)
	case strings.HasPrefix(pub.Topic, strings.TrimSuffix(p.topics.PresenceFilter(), "+/+/+")):
		p.onPresence(pub)
	default:
		p.drop("unexpected topic", "topic", pub.Topic)
	}
}
