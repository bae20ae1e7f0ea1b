package federation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// Provider is what an agent serves: its tools and their calls.
type Provider interface {
	// ListTools returns the agent's tools.
	ListTools(ctx context.Context) ([]Tool, error)
	// CallTool runs one tool and returns its MCP CallToolResult (JSON).
	// A tool's own failure is a result with isError, not an error; an
	// error is reported to the platform as the request's failure.
	CallTool(ctx context.Context, c ToolCall) (json.RawMessage, error)
}

// ChangeNotifier is implemented by providers whose tool list changes: a
// receive on Changed makes the agent announce its new tools.
type ChangeNotifier interface {
	Changed() <-chan struct{}
}

// ToolCall is one call an agent receives.
type ToolCall struct {
	Name      string
	Arguments json.RawMessage
	Caller    Caller
}

// AgentOptions configures ServeAgent.
type AgentOptions struct {
	ConnOptions
	Entity Entity
	// Name is a human-readable name announced with the agent's presence.
	Name string
	// Concurrency bounds the calls run at once (default 64); more wait.
	Concurrency int
	// Ready, when set, is called each time the agent is subscribed and has
	// announced itself (after every reconnection).
	Ready func()
}

// ServeAgent serves p's tools on the broker as entity o.Entity until ctx
// ends: it subscribes to the entity's request topics, announces itself
// (retained) on its presence topic with a will message that marks it
// offline if it vanishes, announces again when p's tools change, and
// answers each request on the response topic the request names (which
// must be the matching .../res topic). On a clean end it clears its
// presence.
func ServeAgent(ctx context.Context, o AgentOptions, p Provider) error {
	if err := o.Entity.Validate(); err != nil {
		return err
	}
	if err := o.defaults("parsemcp-agent-" + o.Entity.Type + "-" + o.Entity.ID); err != nil {
		return err
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	a := &agentServer{o: o, p: p, topics: o.topics(), sem: make(chan struct{}, o.Concurrency), running: map[string]context.CancelFunc{}, ctx: ctx, dialed: make(chan struct{})}
	offline, _ := json.Marshal(Presence{Status: "offline", Name: o.Name})
	// The connection outlives ctx by the time it takes to leave cleanly.
	connCtx, connCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer connCancel()
	c, err := dial(connCtx, &a.o.ConnOptions, connHooks{
		onMessage: a.onMessage,
		onUp:      a.up,
		will:      &paho.WillMessage{Topic: a.topics.Presence(o.Entity), Payload: offline, QoS: 1, Retain: true},
	})
	if err != nil {
		return err
	}
	a.conn = c
	close(a.dialed)
	if cn, ok := p.(ChangeNotifier); ok {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-cn.Changed():
					if a.conn.await(ctx) == nil {
						a.announce(ctx)
					}
				}
			}
		}()
	}
	<-ctx.Done()
	// Leave cleanly: clear the retained presence, then disconnect.
	lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer lcancel()
	if up, _ := c.state(); up {
		_, _ = c.cm.Publish(lctx, &paho.Publish{Topic: a.topics.Presence(o.Entity), Retain: true, QoS: 1, Payload: nil})
	}
	a.mu.Lock()
	a.leaving = true // no request handler starts after this: Add never races Wait
	a.mu.Unlock()
	a.wg.Wait()
	c.close()
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return ctx.Err()
}

type agentServer struct {
	o      AgentOptions
	p      Provider
	topics Topics
	conn   *conn
	ctx    context.Context
	dialed chan struct{} // closed once conn is set
	sem    chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	running map[string]context.CancelFunc // by request id
	leaving bool                          // set once ServeAgent waits for its handlers
}

// up subscribes to the requests and announces the agent after each
// (re)connection.
func (a *agentServer) up(ctx context.Context) {
	<-a.dialed
	if err := a.conn.subscribe(ctx, a.topics.AgentRequests(a.o.Entity)); err != nil {
		a.o.Logger.Error("federation agent: subscribing to requests failed", "err", err)
		return
	}
	a.announce(ctx)
	if a.o.Ready != nil {
		a.o.Ready()
	}
}

// announce publishes the agent's presence with its tools' revision.
func (a *agentServer) announce(ctx context.Context) {
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rev := ""
	if tools, err := a.p.ListTools(actx); err == nil {
		b, _ := json.Marshal(tools)
		sum := sha256.Sum256(b)
		rev = hex.EncodeToString(sum[:8])
	} else {
		a.o.Logger.Warn("federation agent: listing tools failed", "err", err)
		rev = "error-" + newID()[:8]
	}
	body, _ := json.Marshal(Presence{Status: "online", Revision: rev, Name: a.o.Name})
	if _, err := a.conn.cm.Publish(actx, &paho.Publish{Topic: a.topics.Presence(a.o.Entity), Payload: body, QoS: 1, Retain: true}); err != nil {
		a.o.Logger.Warn("federation agent: announcing presence failed", "err", err)
		return
	}
	a.o.Logger.Info("federation agent: announced", "entity", a.o.Entity.String(), "team", a.o.Entity.Team, "revision", rev)
}

func (a *agentServer) onMessage(pub *paho.Publish) {
	user, session, ok := a.topics.parseRequest(pub.Topic, a.o.Entity)
	if !ok {
		a.o.Logger.Warn("federation agent: message on an unexpected topic dropped", "topic", pub.Topic)
		return
	}
	_, _ = user, session
	req, err := decodeRequest(pub.Payload, a.o.MaxPayload)
	if err != nil {
		a.o.Logger.Warn("federation agent: bad request dropped", "topic", pub.Topic, "bytes", len(pub.Payload), "err", err)
		return
	}
	if req.Method == MethodCancel {
		var cp cancelParams
		if json.Unmarshal(req.Params, &cp) == nil {
			a.mu.Lock()
			if cancel := a.running[cp.RequestID]; cancel != nil {
				cancel()
			}
			a.mu.Unlock()
		}
		return
	}
	// The answer goes to the response topic of the same user, session and
	// entity, whatever the request names.
	resTopic := strings.TrimSuffix(pub.Topic, "/req") + "/res"
	if pub.Properties != nil && pub.Properties.ResponseTopic != "" && pub.Properties.ResponseTopic != resTopic {
		a.o.Logger.Warn("federation agent: request naming a foreign response topic dropped", "topic", pub.Topic, "response_topic", pub.Properties.ResponseTopic)
		return
	}
	if pub.Properties != nil && len(pub.Properties.CorrelationData) > 0 && string(pub.Properties.CorrelationData) != req.ID {
		a.o.Logger.Warn("federation agent: request whose correlation data and id differ dropped", "topic", pub.Topic)
		return
	}
	a.mu.Lock()
	if a.leaving {
		a.mu.Unlock()
		return // a request arriving while the agent leaves gets no answer, as after it left
	}
	a.wg.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.wg.Done()
		select {
		case a.sem <- struct{}{}:
		case <-a.ctx.Done():
			return
		}
		defer func() { <-a.sem }()
		a.handle(req, resTopic)
	}()
}

func (a *agentServer) handle(req *request, resTopic string) {
	ctx, cancel := context.WithCancel(a.ctx)
	if req.TimeoutMS > 0 {
		ctx, cancel = context.WithTimeout(a.ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
	}
	defer cancel()
	a.mu.Lock()
	a.running[req.ID] = cancel
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.running, req.ID)
		a.mu.Unlock()
	}()
	res := response{ID: req.ID}
	result, err := a.run(ctx, req)
	if ctx.Err() != nil {
		return // past the deadline or cancelled: nobody waits for the answer
	}
	if err != nil {
		res.Error = &WireError{Code: "agent_error", Message: err.Error()}
	} else {
		res.Result = result
	}
	body, err := json.Marshal(res)
	if err == nil && len(body) > a.o.MaxPayload {
		res.Result, res.Error = nil, &WireError{Code: codeTooLarge, Message: fmt.Sprintf("the result is %d bytes, over the federation's %d-byte limit", len(body), a.o.MaxPayload)}
		body, err = json.Marshal(res)
	}
	if err != nil {
		a.o.Logger.Error("federation agent: encoding a response failed", "err", err)
		return
	}
	pctx, pcancel := context.WithTimeout(a.ctx, 30*time.Second)
	defer pcancel()
	if err := a.conn.publish(pctx, &paho.Publish{Topic: resTopic, Payload: body, Properties: &paho.PublishProperties{CorrelationData: []byte(req.ID), ContentType: "application/json"}}); err != nil {
		a.o.Logger.Warn("federation agent: sending a response failed", "err", err)
	}
}

func (a *agentServer) run(ctx context.Context, req *request) (json.RawMessage, error) {
	switch req.Method {
	case MethodListTools:
		tools, err := a.p.ListTools(ctx)
		if err != nil {
			return nil, err
		}
		if tools == nil {
			tools = []Tool{}
		}
		return json.Marshal(listResult{Tools: tools})
	case MethodCallTool:
		var cp callParams
		if err := json.Unmarshal(req.Params, &cp); err != nil || cp.Name == "" {
			return nil, fmt.Errorf("tools/call: bad params")
		}
		return a.p.CallTool(ctx, ToolCall{Name: cp.Name, Arguments: cp.Arguments, Caller: req.Caller})
	}
	return nil, fmt.Errorf("unknown method %q", req.Method)
}
