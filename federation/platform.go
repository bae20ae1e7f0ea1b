package federation

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/paho"
	lru "github.com/hashicorp/golang-lru/v2"
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
	// tried again while the agent is online (default 15 s).
	RetryInterval time.Duration
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

	now func() time.Time // the subscriptions' clock (tests)
}

// catalogUser and catalogSession name the topics the platform fetches
// tool lists on.
const (
	catalogUser    = "_platform"
	catalogSession = "catalog"
)

// RemoteTool is one tool of the merged remote catalog.
type RemoteTool struct {
	// Name is the namespaced name clients see: "<type>-<id>__<tool>". It
	// always holds a hyphen, which no tool of the server's own may.
	Name   string
	Entity Entity
	// Tool is the tool as its agent describes it (Tool.Name is the
	// agent's own name).
	Tool Tool
}

// Platform is the server side of the federation: one broker connection,
// the catalog of connected agents' tools, and the proxy of calls to them.
type Platform struct {
	o      Options
	topics Topics
	conn   *conn
	subs   *subscriptions
	ann    *lru.Cache[string, *Annotations]
	cancel context.CancelFunc
	ctx    context.Context

	mu       sync.Mutex
	agents   map[string]*agentState // by "type/id"
	byName   map[string]*RemoteTool
	catalog  []RemoteTool
	watchers map[int]func()
	nextW    int

	pendMu  sync.Mutex
	pending map[string]*pendingCall

	dropped atomic.Int64
}

type agentState struct {
	entity   Entity
	online   bool
	revision string // of the tools held
	want     string // the announced revision
	name     string
	tools    []Tool
	err      error
	fetching bool
	again    bool
	gone     chan struct{} // closed when the agent goes offline
	retry    *time.Timer
}

type pendingCall struct {
	topic string
	ch    chan *response
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
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &Platform{o: o, topics: o.topics(), agents: map[string]*agentState{}, byName: map[string]*RemoteTool{},
		watchers: map[int]func(){}, pending: map[string]*pendingCall{}, cancel: cancel, ctx: ctx}
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
		if st.retry != nil {
			st.retry.Stop()
		}
	}
	p.mu.Unlock()
}

// Ready waits until the broker connection is up.
func (p *Platform) Ready(ctx context.Context) error { return p.conn.await(ctx) }

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

// Tools returns the merged remote catalog, sorted by name.
func (p *Platform) Tools() []RemoteTool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]RemoteTool(nil), p.catalog...)
}

// Lookup returns the remote tool clients know as name.
func (p *Platform) Lookup(name string) (RemoteTool, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.byName[name]; ok {
		return *t, true
	}
	return RemoteTool{}, false
}

// Warnings describes the agents whose tools are absent (offline, or
// their tool list could not be fetched) and a lost broker connection.
func (p *Platform) Warnings() []string {
	var out []string
	if up, _ := p.conn.state(); !up {
		out = append(out, "the federation broker is unreachable: remote tools are unavailable until it reconnects")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, st := range p.agents {
		switch {
		case !st.online:
			out = append(out, fmt.Sprintf("agent %s is offline: its tools are absent", st.entity))
		case st.err != nil:
			out = append(out, fmt.Sprintf("agent %s is unavailable (%v): its tools are absent", st.entity, st.err))
		case st.tools == nil:
			out = append(out, fmt.Sprintf("agent %s is connecting: its tools are not listed yet", st.entity))
		}
	}
	sort.Strings(out)
	return out
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

func (p *Platform) onResponse(pub *paho.Publish) {
	r, err := decodeResponse(pub.Payload, p.o.MaxPayload)
	if err != nil {
		p.drop("bad response", "topic", pub.Topic, "bytes", len(pub.Payload), "err", err)
		return
	}
	if pub.Properties != nil && len(pub.Properties.CorrelationData) > 0 && string(pub.Properties.CorrelationData) != r.ID {
		p.drop("correlation data and payload id differ", "topic", pub.Topic)
		return
	}
	p.pendMu.Lock()
	pc := p.pending[r.ID]
	p.pendMu.Unlock()
	if pc == nil {
		p.drop("answers no pending call (late, or a foreign correlation id)", "topic", pub.Topic)
		return
	}
	if pc.topic != pub.Topic {
		p.drop("response on the wrong topic", "topic", pub.Topic, "want", pc.topic)
		return
	}
	select {
	case pc.ch <- r:
	default: // a duplicate
	}
}

func (p *Platform) onPresence(pub *paho.Publish) {
	e, ok := p.topics.ParsePresence(pub.Topic)
	if !ok {
		p.drop("bad presence topic", "topic", pub.Topic)
		return
	}
	key := e.String()
	if len(pub.Payload) == 0 { // cleared: the agent left for good
		p.mu.Lock()
		st := p.agents[key]
		if st != nil && st.entity.Team == e.Team {
			p.forgetLocked(st)
			delete(p.agents, key)
			p.rebuildLocked()
		}
		p.mu.Unlock()
		if st != nil {
			p.o.Logger.Info("federation: agent left", "agent", key)
			p.notify()
		}
		return
	}
	pr, err := decodePresence(pub.Payload, p.o.MaxPayload)
	if err != nil {
		p.drop("bad presence", "topic", pub.Topic, "err", err)
		return
	}
	p.mu.Lock()
	st := p.agents[key]
	if st == nil {
		st = &agentState{entity: e, gone: make(chan struct{})}
		p.agents[key] = st
	}
	if st.entity.Team != e.Team {
		p.o.Logger.Warn("federation: agent announced itself under another team", "agent", key, "was", st.entity.Team, "now", e.Team)
		p.forgetLocked(st)
		st.entity = e
	}
	st.name = pr.Name
	fetch := false
	if pr.Status == "offline" {
		if st.online {
			p.o.Logger.Warn("federation: agent offline", "agent", key)
		}
		p.forgetLocked(st)
		st.online = false
	} else {
		if !st.online {
			st.gone = make(chan struct{})
			p.o.Logger.Info("federation: agent online", "agent", key, "team", e.Team)
		}
		st.online = true
		st.want = pr.Revision
		fetch = st.tools == nil || st.revision != pr.Revision || st.err != nil
	}
	p.rebuildLocked()
	p.mu.Unlock()
	p.notify()
	if fetch {
		go p.refresh(e)
	}
}

// forgetLocked drops an agent's tools and fails its calls in flight.
func (p *Platform) forgetLocked(st *agentState) {
	if st.online {
		close(st.gone)
	}
	st.tools, st.revision, st.err = nil, "", nil
	if st.retry != nil {
		st.retry.Stop()
		st.retry = nil
	}
}

// refresh fetches e's tool list; concurrent refreshes of one agent fold
// into one (and one more when a newer revision was announced meanwhile).
func (p *Platform) refresh(e Entity) {
	key := e.String()
	p.mu.Lock()
	st := p.agents[key]
	if st == nil || !st.online {
		p.mu.Unlock()
		return
	}
	if st.fetching {
		st.again = true
		p.mu.Unlock()
		return
	}
	st.fetching = true
	want := st.want
	p.mu.Unlock()

	ctx, cancel := context.WithTimeout(p.ctx, p.o.ListTimeout)
	tools, err := p.fetchTools(ctx, st.entity)
	cancel()

	p.mu.Lock()
	st.fetching = false
	again := st.again
	st.again = false
	if p.agents[key] != st || !st.online {
		p.mu.Unlock()
		return
	}
	if err != nil {
		st.err, st.tools = err, nil
		p.o.Logger.Warn("federation: fetching an agent's tools failed", "agent", key, "err", err)
		if p.ctx.Err() == nil {
			st.retry = time.AfterFunc(p.o.RetryInterval, func() { p.refresh(e) })
		}
	} else {
		st.err, st.tools, st.revision = nil, tools, want
		for _, t := range tools {
			p.ann.Add(annKey(st.entity, t.Name), t.Annotations)
		}
		p.o.Logger.Info("federation: agent tools listed", "agent", key, "tools", len(tools), "revision", want)
	}
	p.rebuildLocked()
	again = again || (err == nil && st.want != want)
	p.mu.Unlock()
	p.notify()
	if again {
		go p.refresh(e)
	}
}

// fetchTools asks e for its tools and keeps the valid ones.
func (p *Platform) fetchTools(ctx context.Context, e Entity) ([]Tool, error) {
	raw, err := p.request(ctx, Caller{User: catalogUser, Session: catalogSession}, e, MethodListTools, nil)
	if err != nil {
		return nil, err
	}
	tools, skipped, truncated, err := decodeToolList(raw, p.o.MaxToolsPerAgent)
	for _, err := range skipped {
		p.o.Logger.Warn("federation: remote tool skipped", "agent", e.String(), "err", err)
	}
	if truncated {
		p.o.Logger.Warn("federation: agent offers too many tools; the rest are skipped", "agent", e.String(), "limit", p.o.MaxToolsPerAgent)
	}
	return tools, err
}

func annKey(e Entity, tool string) string { return e.String() + "\x00" + tool }

// rebuildLocked recomputes the merged catalog from the online agents.
func (p *Platform) rebuildLocked() {
	byName := map[string]*RemoteTool{}
	var all []RemoteTool
	keys := make([]string, 0, len(p.agents))
	for k := range p.agents {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		st := p.agents[k]
		if !st.online || st.err != nil {
			continue
		}
		for _, t := range st.tools {
			name := ExposedName(st.entity, t.Name)
			if _, taken := byName[name]; taken {
				sum := sha256.Sum256([]byte(annKey(st.entity, t.Name)))
				name = name[:min(len(name), 55)] + "_" + hex.EncodeToString(sum[:4])
			}
			rt := RemoteTool{Name: name, Entity: st.entity, Tool: t}
			all = append(all, rt)
			byName[name] = &all[len(all)-1]
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	p.byName = make(map[string]*RemoteTool, len(all))
	for i := range all {
		p.byName[all[i].Name] = &all[i]
	}
	p.catalog = all
}

// ExposedName is the name clients see for tool of e:
// "<type>-<id>__<tool>", the tool name's characters outside
// [A-Za-z0-9_-] replaced by '_', at most 64 characters (a longer one is
// cut and ends in a hash). It always holds a hyphen, which the server's
// own tool names never do, so a remote tool cannot shadow a local one.
func ExposedName(e Entity, tool string) string {
	var b strings.Builder
	for _, r := range tool {
		if r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := e.Type + "-" + e.ID + "__" + b.String()
	if len(name) > 64 {
		sum := sha256.Sum256([]byte(annKey(e, tool)))
		name = name[:55] + "_" + hex.EncodeToString(sum[:4])
	}
	return name
}

// Annotations returns the annotations of the remote tool clients know as
// name, from the annotation cache (a miss fetches the agent's list
// again), with its agent. A tool without annotations yields nil: callers
// must count it as writing (Annotations.ReadOnly does).
func (p *Platform) Annotations(ctx context.Context, name string) (*Annotations, Entity, error) {
	rt, ok := p.Lookup(name)
	if !ok {
		return nil, Entity{}, fmt.Errorf("%w: %s", ErrUnknownTool, name)
	}
	if a, ok := p.ann.Get(annKey(rt.Entity, rt.Tool.Name)); ok {
		return a, rt.Entity, nil
	}
	tools, err := p.fetchTools(ctx, rt.Entity)
	if err != nil {
		return nil, rt.Entity, err
	}
	for _, t := range tools {
		p.ann.Add(annKey(rt.Entity, t.Name), t.Annotations)
		if t.Name == rt.Tool.Name {
			return t.Annotations, rt.Entity, nil
		}
	}
	return nil, rt.Entity, fmt.Errorf("%w: %s (the agent no longer offers it)", ErrUnknownTool, name)
}

// Errors of Call.
var (
	ErrUnknownTool = errors.New("unknown remote tool")
	ErrTimeout     = errors.New("the agent did not answer in time")
)

// ToolError is a remote tool's own error result (isError): Result is the
// MCP CallToolResult to pass on, Text its first text.
type ToolError struct {
	Entity Entity
	Text   string
	Result json.RawMessage
}

func (e *ToolError) Error() string { return "remote tool error: " + e.Text }

// Call runs the remote tool clients know as name for caller and returns
// its MCP CallToolResult (JSON). A tool's own failure is a *ToolError
// holding its result; an agent that does not answer before ctx's
// deadline (or CallTimeout) yields an error wrapping ErrTimeout; an
// offline agent or a lost broker connection, ErrUnavailable.
func (p *Platform) Call(ctx context.Context, caller Caller, name string, args json.RawMessage) (json.RawMessage, error) {
	rt, ok := p.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTool, name)
	}
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.o.CallTimeout)
		defer cancel()
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	raw, err := p.request(ctx, caller, rt.Entity, MethodCallTool, callParams{Name: rt.Tool.Name, Arguments: args})
	if err != nil {
		return nil, err
	}
	isErr, text, err := checkCallResult(raw)
	if err != nil {
		p.o.Logger.Warn("federation: agent answered with a malformed tool result", "agent", rt.Entity.String(), "tool", rt.Tool.Name, "err", err)
		return nil, fmt.Errorf("agent %s: %w", rt.Entity, err)
	}
	if isErr {
		return nil, &ToolError{Entity: rt.Entity, Text: text, Result: raw}
	}
	return raw, nil
}

// request publishes one request to e and waits for its answer.
func (p *Platform) request(ctx context.Context, caller Caller, e Entity, method string, params any) (json.RawMessage, error) {
	p.mu.Lock()
	st := p.agents[e.String()]
	var gone chan struct{}
	if st != nil && st.online {
		gone = st.gone
	}
	p.mu.Unlock()
	if gone == nil {
		return nil, fmt.Errorf("%w: agent %s is offline", ErrUnavailable, e)
	}
	resTopic := p.topics.Response(caller.User, caller.Session, e)
	if err := p.subs.acquire(ctx, resTopic); err != nil {
		return nil, p.ctxError(ctx, e, err)
	}
	req := request{ID: newID(), Method: method, Caller: caller}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		req.Params = b
	}
	var expiry *uint32
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		req.TimeoutMS = max(left.Milliseconds(), 1)
		secs := uint32(max(left.Seconds()+1, 1))
		expiry = &secs
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if len(body) > p.o.MaxPayload {
		return nil, fmt.Errorf("%w: the request is %d bytes (limit %d)", ErrPayloadTooLarge, len(body), p.o.MaxPayload)
	}
	pc := &pendingCall{topic: resTopic, ch: make(chan *response, 1)}
	p.pendMu.Lock()
	p.pending[req.ID] = pc
	p.pendMu.Unlock()
	defer func() {
		p.pendMu.Lock()
		delete(p.pending, req.ID)
		p.pendMu.Unlock()
	}()
	_, down := p.conn.state()
	err = p.conn.publish(ctx, &paho.Publish{Topic: p.topics.Request(caller.User, caller.Session, e), Payload: body,
		Properties: &paho.PublishProperties{ResponseTopic: resTopic, CorrelationData: []byte(req.ID), ContentType: "application/json", MessageExpiry: expiry}})
	if err != nil {
		return nil, p.ctxError(ctx, e, err)
	}
	select {
	case r := <-pc.ch:
		if r.Error != nil {
			return nil, fmt.Errorf("agent %s refused the request: %w", e, r.Error)
		}
		return r.Result, nil
	case <-gone:
		return nil, fmt.Errorf("%w: agent %s went offline during the call", ErrUnavailable, e)
	case <-down:
		return nil, fmt.Errorf("%w: the broker connection was lost during the call to agent %s", ErrUnavailable, e)
	case <-ctx.Done():
		if method == MethodCallTool {
			p.cancelRemote(caller, e, req.ID)
		}
		return nil, p.ctxError(ctx, e, ctx.Err())
	}
}

// ctxError turns a context end into ErrTimeout (a deadline) or the
// context's error, and passes other errors on.
func (p *Platform) ctxError(ctx context.Context, e Entity, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: agent %s: %w", ErrTimeout, e, context.DeadlineExceeded)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// cancelRemote tells the agent, best effort, that nobody waits for a
// call any more.
func (p *Platform) cancelRemote(caller Caller, e Entity, id string) {
	params, _ := json.Marshal(cancelParams{RequestID: id})
	body, _ := json.Marshal(request{ID: newID(), Method: MethodCancel, Params: params, Caller: caller})
	go func() {
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		defer cancel()
		_ = p.conn.publish(ctx, &paho.Publish{Topic: p.topics.Request(caller.User, caller.Session, e), Payload: body})
	}()
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CallTimeout is the default time limit of a proxied call.
func (p *Platform) CallTimeout() time.Duration { return p.o.CallTimeout }
