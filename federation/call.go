package federation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// Errors of Call.
var (
	ErrUnknownTool = errors.New("unknown remote tool")
	ErrTimeout     = errors.New("the agent did not answer in time")
	// ErrBadAnswer: the agent answered the call with something that is
	// not its answer (malformed, another request's id, not a tool
	// result). An answer over MaxPayload fails with ErrPayloadTooLarge.
	ErrBadAnswer = errors.New("the agent's answer is not a valid answer to the call")
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
		return nil, fmt.Errorf("agent %s: %w (%w)", rt.Entity, ErrBadAnswer, err)
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
	pc := &pendingCall{topic: resTopic, ch: make(chan answer, 1)}
	p.pendMu.Lock()
	p.pending[req.ID] = pc
	p.pendMu.Unlock()
	defer func() {
		p.pendMu.Lock()
		delete(p.pending, req.ID)
		p.finished.Add(req.ID, struct{}{})
		p.pendMu.Unlock()
	}()
	_, down := p.conn.state()
	err = p.conn.publish(ctx, &paho.Publish{Topic: p.topics.Request(caller.User, caller.Session, e), Payload: body,
		Properties: &paho.PublishProperties{ResponseTopic: resTopic, CorrelationData: []byte(req.ID), ContentType: "application/json", MessageExpiry: expiry}})
	if err != nil {
		return nil, p.ctxError(ctx, e, err)
	}
	select {
	case a := <-pc.ch:
		if a.err != nil {
			return nil, fmt.Errorf("agent %s: %w", e, a.err)
		}
		if a.r.Error != nil && a.r.Error.Code == codeTooLarge {
			return nil, fmt.Errorf("agent %s: %w: %s", e, ErrPayloadTooLarge, a.r.Error.Message)
		}
		if a.r.Error != nil {
			return nil, fmt.Errorf("agent %s refused the request: %w", e, a.r.Error)
		}
		return a.r.Result, nil
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

// codeTooLarge is the code of an agent's refusal to send a result over
// its payload limit.
const codeTooLarge = "too_large"

// pendingCall is a request waiting for its answer on topic.
type pendingCall struct {
	topic string
	ch    chan answer
}

// answer is what ends a pending call: the agent's response, or why what
// it sent fails the call.
type answer struct {
	r   *response
	err error
}

// onResponse routes an answer to its call: the one named by the MQTT
// correlation data when there is some, else the one its payload id
// names. Only a call waiting on the topic the answer came on is ever
// touched. An answer that cannot be its call's (malformed, oversized, or
// naming a request that is not the call's) fails the call at once
// instead of leaving it to time out: the call the correlation data
// names, or, without correlation data, every call waiting on the topic
// (which belongs to one caller, session and agent). A well-formed answer
// to a call that already ended is dropped.
func (p *Platform) onResponse(pub *paho.Publish) {
	var corr string
	if pub.Properties != nil {
		corr = string(pub.Properties.CorrelationData)
	}
	r, err := decodeResponse(pub.Payload, p.o.MaxPayload)
	id := corr
	if id == "" && err == nil {
		id = r.ID
	}
	p.pendMu.Lock()
	var calls []*pendingCall
	matched, late := false, false
	switch pc := p.pending[id]; {
	case pc != nil && pc.topic == pub.Topic:
		calls, matched = append(calls, pc), true
	case pc != nil: // another topic's call
	case id != "" && p.finished.Contains(id):
		late = true
	case corr != "": // correlation data naming no call
	default: // no correlation data, no call of this id: every call on the topic
		for _, pc := range p.pending {
			if pc.topic == pub.Topic {
				calls = append(calls, pc)
			}
		}
	}
	p.pendMu.Unlock()
	switch {
	case matched && err == nil && r.ID == id:
		calls[0].deliver(answer{r: r})
		return
	case late:
		p.drop("answers a call that already ended", "topic", pub.Topic)
		return
	case len(calls) == 0 && err != nil:
		p.drop("bad response", "topic", pub.Topic, "bytes", len(pub.Payload), "err", err)
		return
	case len(calls) == 0:
		p.drop("answers no pending call on its topic (a foreign correlation id, or the wrong topic)", "topic", pub.Topic)
		return
	}
	switch {
	case errors.Is(err, ErrPayloadTooLarge):
	case err != nil:
		err = fmt.Errorf("%w (%w)", ErrBadAnswer, err)
	default:
		err = fmt.Errorf("%w (it answers request %q)", ErrBadAnswer, r.ID)
	}
	p.dropped.Add(1)
	p.o.Logger.Warn("federation: a bad answer fails the call", "topic", pub.Topic, "bytes", len(pub.Payload), "calls", len(calls), "err", err)
	for _, pc := range calls {
		pc.deliver(answer{err: err})
	}
}

// deliver ends the call with a (a duplicate is dropped).
func (pc *pendingCall) deliver(a answer) {
	select {
	case pc.ch <- a:
	default:
	}
}
