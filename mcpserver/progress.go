package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/tools"
)

// DefaultHeartbeatInterval is how often a running tool call that carries a
// progress token is reported alive.
const DefaultHeartbeatInterval = 2 * time.Second

// ReportProgress reports a tool's own progress to the client that called
// it, as notifications/progress on the call's stream (see
// tools.ReportProgress, which it is). The first report stops the server's
// heartbeats for the call. Tools registered by an embedding application
// call it with the context their handler received.
func ReportProgress(ctx context.Context, progress, total float64, message string) {
	tools.ReportProgress(ctx, progress, total, message)
}

// progressReporter sends the notifications/progress of one tool call:
// heartbeats until the tool reports on its own, then the tool's reports.
// Values sent always increase: heartbeats count up from 1/2 towards 1
// (1/2, 2/3, 3/4, …), and a tool report is sent only when it is above the
// last value sent.
type progressReporter struct {
	ss    *mcp.ServerSession
	token any
	ctx   context.Context

	mu    sync.Mutex
	last  float64
	own   bool // the tool reported: heartbeats stop
	beats int
	start time.Time
	done  bool
}

// startProgress starts the heartbeats of a call carrying a progress token
// and installs the tool's reporter in the context; stop ends both.
func (s *Server) startProgress(ctx context.Context, req *mcp.CallToolRequest) (context.Context, func()) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return ctx, func() {}
	}
	p := &progressReporter{ss: req.Session, token: token, ctx: ctx, start: time.Now()}
	ticker := time.NewTicker(s.heartbeat)
	quit := make(chan struct{})
	go func() {
		defer ticker.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-ticker.C:
				p.heartbeat()
			}
		}
	}()
	stop := func() {
		p.mu.Lock()
		p.done = true
		p.mu.Unlock()
		close(quit)
	}
	return tools.WithProgress(ctx, p.report), stop
}

func (p *progressReporter) heartbeat() {
	p.mu.Lock()
	if p.own || p.done {
		p.mu.Unlock()
		return
	}
	p.beats++
	v := 1 - 1/float64(p.beats+1)
	p.last = v
	p.send(v, 0, fmt.Sprintf("working (%.0f s)", time.Since(p.start).Seconds()))
	p.mu.Unlock()
}

func (p *progressReporter) report(progress, total float64, message string) {
	p.mu.Lock()
	p.own = true
	if p.done || progress <= p.last {
		p.mu.Unlock()
		return
	}
	p.last = progress
	p.send(progress, total, message)
	p.mu.Unlock()
}

// send runs under p.mu, so nothing is sent once stop returned (the
// response follows the last notification).
func (p *progressReporter) send(progress, total float64, message string) {
	_ = p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: progress, Total: total, Message: message})
}
