package federation

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// agentState is what the platform knows of one agent (keyed by
// "type/id": an agent is in one team at a time).
type agentState struct {
	entity   Entity
	online   bool
	revision string // of the tools held
	want     string // the announced revision
	name     string
	tools    []Tool
	leftOut  []string // why tools of the list held were left out
	err      error
	fetching bool
	again    bool
	gone     chan struct{} // closed when the agent goes offline
	retry    func() bool   // stops the scheduled retry of a failed fetch
	failures int           // failed fetches since the last success or announcement
	gaveUp   bool          // FetchAttempts fetches failed: wait for a new announcement
	warned   bool          // a failure was logged at WARN since the last success
}

// onPresence handles an announcement, through the per-agent rate limit.
func (p *Platform) onPresence(pub *paho.Publish) {
	e, ok := p.topics.ParsePresence(pub.Topic)
	if !ok {
		p.drop("bad presence topic", "topic", pub.Topic)
		return
	}
	p.gate.admit(e.String(), func() { p.handlePresence(e, pub.Payload) })
}

// handlePresence applies one announcement of e. A message under another
// team than the agent's is a team switch when it says online (the agent
// under its old team leaves, a new one arrives); an offline or cleared
// message under another team touches nothing.
func (p *Platform) handlePresence(e Entity, payload []byte) {
	key := e.String()
	if len(payload) == 0 { // cleared: the agent left for good
		p.mu.Lock()
		st := p.agents[key]
		left := st != nil && st.entity.Team == e.Team
		if left {
			p.forgetLocked(st)
			delete(p.agents, key)
			p.rebuildLocked()
		}
		p.mu.Unlock()
		if left {
			p.o.Logger.Info("federation: agent left", "agent", key)
			p.notify()
		}
		return
	}
	pr, err := decodePresence(payload, p.o.MaxPayload)
	if err != nil {
		p.drop("bad presence", "agent", key, "err", err)
		return
	}
	p.mu.Lock()
	st := p.agents[key]
	if st != nil && st.entity.Team != e.Team {
		if pr.Status == "offline" {
			p.mu.Unlock()
			p.drop("offline presence under another team than the agent's", "agent", key, "team", e.Team, "agent_team", st.entity.Team)
			return
		}
		p.o.Logger.Warn("federation: agent announced itself under another team: the agent of its old team left", "agent", key, "was", st.entity.Team, "now", e.Team)
		p.forgetLocked(st)
		delete(p.agents, key)
		st = nil
	}
	if st == nil {
		st = &agentState{entity: e}
		p.agents[key] = st
	}
	st.name = pr.Name
	fetch := false
	if pr.Status == "offline" {
		if st.online {
			p.o.Logger.Warn("federation: agent offline", "agent", key)
		}
		p.forgetLocked(st)
	} else {
		fetch = p.announcedLocked(st, pr.Revision)
	}
	p.rebuildLocked()
	p.mu.Unlock()
	p.notify()
	if fetch {
		go p.refresh(st)
	}
}

// announcedLocked records that st announced itself online with revision
// rev and reports whether its tools are to be fetched: when it comes
// online, announces a new revision, or was given up on. Such an
// announcement starts the retries afresh; a repeat of the revision being
// retried leaves the backoff as it is.
func (p *Platform) announcedLocked(st *agentState, rev string) bool {
	fetch := st.gaveUp || rev != st.want
	if !st.online {
		st.online, st.gone, fetch = true, make(chan struct{}), true
		p.o.Logger.Info("federation: agent online", "agent", st.entity.String(), "team", st.entity.Team)
	}
	st.want = rev
	if st.tools != nil && st.revision == rev && st.err == nil {
		fetch = false
	}
	if fetch {
		st.failures, st.gaveUp = 0, false
		st.stopRetry()
	}
	return fetch
}

// forgetLocked takes st offline: its tools are dropped and its calls in
// flight fail. It may run any number of times.
func (p *Platform) forgetLocked(st *agentState) {
	if st.online {
		close(st.gone)
		st.online = false
	}
	st.tools, st.revision, st.want, st.err, st.leftOut = nil, "", "", nil, nil
	st.failures, st.gaveUp, st.warned = 0, false, false
	st.stopRetry()
}

func (st *agentState) stopRetry() {
	if st.retry != nil {
		st.retry()
		st.retry = nil
	}
}

// refresh fetches st's tool list; concurrent refreshes of one agent fold
// into one (and one more when a newer revision was announced meanwhile).
func (p *Platform) refresh(st *agentState) {
	key := st.entity.String()
	p.mu.Lock()
	if p.agents[key] != st || !st.online {
		p.mu.Unlock()
		return
	}
	if st.fetching {
		st.again = true
		p.mu.Unlock()
		return
	}
	st.fetching = true
	st.stopRetry()
	want, e := st.want, st.entity
	p.mu.Unlock()

	ctx, cancel := context.WithTimeout(p.ctx, p.o.ListTimeout)
	tools, leftOut, err := p.fetchTools(ctx, e)
	cancel()

	p.mu.Lock()
	st.fetching = false
	again := st.again && st.want != want
	st.again = false
	if p.agents[key] != st || !st.online {
		p.mu.Unlock()
		return
	}
	switch {
	case err != nil && again:
		st.err, st.tools = err, nil // a newer revision is fetched at once
	case err != nil:
		p.fetchFailedLocked(st, err)
	default:
		st.err, st.tools, st.revision, st.leftOut = nil, tools, want, leftOut
		st.failures, st.gaveUp, st.warned = 0, false, false
		for _, t := range tools {
			p.ann.Add(annKey(e, t.Name), t.Annotations)
		}
		p.o.Logger.Info("federation: agent tools listed", "agent", key, "tools", len(tools), "revision", want)
	}
	p.rebuildLocked()
	p.mu.Unlock()
	p.notify()
	if again {
		go p.refresh(st)
	}
}

// fetchFailedLocked records a failed fetch of st's tools and schedules
// the next one after a backoff (RetryInterval doubling up to
// MaxRetryInterval, plus up to a tenth of jitter), or gives up after
// FetchAttempts until the agent announces itself again. Only the first
// failure and the giving up are logged at WARN.
func (p *Platform) fetchFailedLocked(st *agentState, err error) {
	st.err, st.tools = err, nil
	st.failures++
	agent := st.entity.String()
	if st.failures >= p.o.FetchAttempts {
		st.gaveUp = true
		p.o.Logger.Warn("federation: giving up fetching an agent's tools until it announces itself again", "agent", agent, "attempts", st.failures, "err", err)
		return
	}
	delay := retryDelay(p.o.RetryInterval, p.o.MaxRetryInterval, st.failures)
	level := slog.LevelDebug
	if !st.warned {
		level, st.warned = slog.LevelWarn, true
	}
	p.o.Logger.Log(p.ctx, level, "federation: fetching an agent's tools failed; retrying", "agent", agent, "attempt", st.failures, "retry_in", delay, "err", err)
	if p.ctx.Err() == nil {
		st.retry = p.o.afterFunc(delay, func() { p.refresh(st) })
	}
}

// retryDelay is the wait before retry n (1, 2, …): base doubled n-1
// times, at most limit, plus a random tenth of it.
func retryDelay(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d + rand.N(d/10+1)
}

// fetchTools asks e for its tools and keeps the valid ones (within the
// bounds of limits.go, and passing Options.CheckTool); leftOut says why
// each other one was left out, for the warnings.
func (p *Platform) fetchTools(ctx context.Context, e Entity) (tools []Tool, leftOut []string, err error) {
	raw, err := p.request(ctx, Caller{User: catalogUser, Session: catalogSession}, e, MethodListTools, nil)
	if err != nil {
		return nil, nil, err
	}
	tools, skipped, truncated, err := decodeToolList(raw, p.o.MaxToolsPerAgent)
	if p.o.CheckTool != nil {
		kept := tools[:0]
		for _, t := range tools {
			if cerr := p.o.CheckTool(ExposedName(e, t.Name), t); cerr != nil {
				skipped = append(skipped, fmt.Errorf("tool %s: %v", t.Name, cerr))
				continue
			}
			kept = append(kept, t)
		}
		tools = kept
	}
	for _, err := range skipped {
		p.o.Logger.Warn("federation: remote tool left out", "agent", e.String(), "err", err)
		leftOut = append(leftOut, fmt.Sprintf("agent %s: %v: the tool is left out", e, err))
	}
	if truncated {
		p.o.Logger.Warn("federation: agent offers too many tools; the rest are left out", "agent", e.String(), "limit", p.o.MaxToolsPerAgent)
		leftOut = append(leftOut, fmt.Sprintf("agent %s offers more than %d tools: the rest are left out", e, p.o.MaxToolsPerAgent))
	}
	return tools, leftOut, err
}
