package mcpserver

import (
	"context"
	"log/slog"
)

// sessionIDKey is the attribute the go-sdk logs session IDs under.
const sessionIDKey = "session_id"

// redactSessionIDs wraps the logger handed to the go-sdk so that session IDs
// appear in debug records only: without bearer tokens a session ID is the
// session's credential, and the SDK logs it at info when a session
// connects.
func redactSessionIDs(log *slog.Logger) *slog.Logger {
	return slog.New(&redacting{inner: log.Handler()})
}

type redacting struct{ inner slog.Handler }

func (h *redacting) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *redacting) Handle(ctx context.Context, r slog.Record) error {
	if r.Level <= slog.LevelDebug {
		return h.inner.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redact(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h *redacting) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = redact(a)
	}
	return &redacting{inner: h.inner.WithAttrs(out)}
}

func (h *redacting) WithGroup(name string) slog.Handler {
	return &redacting{inner: h.inner.WithGroup(name)}
}

func redact(a slog.Attr) slog.Attr {
	if a.Key == sessionIDKey {
		return slog.String(sessionIDKey, "[redacted; shown at debug level]")
	}
	return a
}
