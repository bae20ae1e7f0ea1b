package mcpserver

import (
	"context"
	"log/slog"
	"strings"
)

// sdkLogger is the logger the SDK server gets: the operator's, except
// that the SDK's failure to send a notification to one session (a
// list_changed to a session whose client went away without closing it,
// or never opened a stream for notifications: "calling
// notifications/tools/list_changed: rejected by transport: undelivered
// message: stream not connected …", once per such session on every list
// change) is DEBUG, not WARN. Such a session ends with its idle timeout.
func sdkLogger(l *slog.Logger) *slog.Logger {
	return slog.New(notifyDemoter{l.Handler()})
}

type notifyDemoter struct{ slog.Handler }

func (h notifyDemoter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.HasPrefix(r.Message, "calling notifications/") {
		r.Level = slog.LevelDebug
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h notifyDemoter) WithAttrs(as []slog.Attr) slog.Handler {
	return notifyDemoter{h.Handler.WithAttrs(as)}
}

func (h notifyDemoter) WithGroup(name string) slog.Handler {
	return notifyDemoter{h.Handler.WithGroup(name)}
}
