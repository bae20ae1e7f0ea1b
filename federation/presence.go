package federation

import (
	"context"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

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
