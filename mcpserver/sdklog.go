package mcpserver

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// sdkLogger is the logger the SDK server gets: the operator's, with two
// kinds of the SDK's lines lowered to DEBUG, since neither is the
// operator's error and both come as often as a client likes:
//
//   - its failure to send a notification to one session (a list_changed
//     to a session whose client went away without closing it, or never
//     opened a stream for notifications: "calling
//     notifications/tools/list_changed: rejected by transport: …", once
//     per such session on every list change). Such a session ends with its
//     idle timeout.
//   - a client's protocol mistake ("method invalid during
//     initialization" for a call before initialize, a duplicate
//     initialize, a method the client's protocol version removed), which
//     the client is told in its JSON-RPC error. An INFO line counts them
//     at most once a minute, so they stay visible without filling a disk.
func sdkLogger(l *slog.Logger) *slog.Logger {
	return slog.New(&sdkHandler{Handler: l.Handler(), mistakes: &mistakeCount{summary: rate.Sometimes{First: 1, Interval: time.Minute}}})
}

// clientMistakes are the SDK's messages for a client's protocol mistakes.
var clientMistakes = map[string]bool{
	"method invalid during initialization": true,
	"method removed in the new protocol":   true,
	"initialized before initialize":        true,
	"duplicate initialized notification":   true,
	"duplicate initialize request":         true,
}

type sdkHandler struct {
	slog.Handler
	mistakes *mistakeCount
}

// mistakeCount counts clients' protocol mistakes between two summaries.
type mistakeCount struct {
	mu      sync.Mutex
	n       int
	latest  string
	summary rate.Sometimes
}

func (h *sdkHandler) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case r.Level == slog.LevelWarn && strings.HasPrefix(r.Message, "calling notifications/"):
		r.Level = slog.LevelDebug
	case clientMistakes[r.Message]:
		r.Level = slog.LevelDebug
		h.summarize(ctx, r)
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// summarize counts a client's mistake and, at most once a minute, logs
// how many came since the last summary.
func (h *sdkHandler) summarize(ctx context.Context, r slog.Record) {
	m := h.mistakes
	m.mu.Lock()
	m.n++
	m.latest = r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "method" {
			m.latest += " (" + a.Value.String() + ")"
		}
		return true
	})
	var n int
	var latest string
	m.summary.Do(func() { n, latest, m.n = m.n, m.latest, 0 })
	m.mu.Unlock()
	if n > 0 && h.Handler.Enabled(ctx, slog.LevelInfo) {
		s := slog.NewRecord(time.Now(), slog.LevelInfo, "clients' protocol mistakes, answered with a JSON-RPC error (each at DEBUG)", 0)
		s.AddAttrs(slog.Int("count", n), slog.String("latest", latest))
		_ = h.Handler.Handle(ctx, s)
	}
}

func (h *sdkHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &sdkHandler{Handler: h.Handler.WithAttrs(as), mistakes: h.mistakes}
}

func (h *sdkHandler) WithGroup(name string) slog.Handler {
	return &sdkHandler{Handler: h.Handler.WithGroup(name), mistakes: h.mistakes}
}
