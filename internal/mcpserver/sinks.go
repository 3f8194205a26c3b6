package mcpserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/mcpe-server/mcpe-server/delivery/realtime"
)

// lineWriter is the writing side of a stdio session. The go-sdk's
// transport (mcp.IOTransport) writes each of its messages through it as one
// whole line; the session's notifications are written beside them, a batch
// per write(2), already encoded: the SDK's writer would validate and
// compact each one again and make a system call per message, most of the
// cost of a notification. The lock keeps the lines whole.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// maxKeptBuffer bounds the buffer a lineWriter keeps between batches.
const maxKeptBuffer = 1 << 20

func newLineWriter(w io.Writer) *lineWriter { return &lineWriter{w: w} }

// Write writes one message of the SDK's.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does nothing: the process's standard output outlives the session.
func (l *lineWriter) Close() error { return nil }

// WriteMessages writes msgs as notifications, in one write. A write to a
// pipe does not observe ctx once begun; the registry does not wait on a
// writer that blocks.
func (l *lineWriter) WriteMessages(ctx context.Context, msgs []realtime.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buf[:0]
	for _, m := range msgs {
		b = realtime.AppendNotification(b, m)
	}
	_, err := l.w.Write(b)
	if cap(b) <= maxKeptBuffer {
		l.buf = b
	} else {
		l.buf = nil
	}
	return err
}

// lineSink is the realtime.Sink of a stdio session.
type lineSink struct{ w *lineWriter }

func (s lineSink) Write(ctx context.Context, msgs []realtime.Message) error {
	return s.w.WriteMessages(ctx, msgs)
}

// streamSink is the sink of a Streamable HTTP session: notifications go
// through the SDK's connection to the session's event stream, live while
// that stream is open. A batch is flushed to the client once, at its end,
// rather than once per message.
type streamSink struct {
	*Sink
	id   string
	live *liveness
}

// Live reports whether the session's event stream is open.
func (s *streamSink) Live() bool { return s.live.live(s.id) }

func (s *streamSink) Write(ctx context.Context, msgs []realtime.Message) error {
	if hw := s.live.stream(s.id); hw != nil && len(msgs) > 1 {
		hw.hold()
		defer hw.release()
	}
	return s.Sink.Write(ctx, msgs)
}

var errStreamClosed = errors.New("mcpserver: the event stream is closed")

// heldWriter is the response writer of an event stream. While held, the
// flushes the SDK makes after each event are put off until release, so
// that a batch of events reaches the client in one flush. Every write and
// flush of the stream goes through its lock; once the stream's handler
// returns, nothing more is written.
type heldWriter struct {
	http.ResponseWriter
	mu      sync.Mutex
	holds   int
	pending bool
	done    bool
}

func (h *heldWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return 0, errStreamClosed
	}
	return h.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController calls to flush.
func (h *heldWriter) FlushError() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holds > 0 {
		h.pending = true
		return nil
	}
	return h.flushLocked()
}

// Flush is for callers that use http.Flusher.
func (h *heldWriter) Flush() { _ = h.FlushError() }

func (h *heldWriter) flushLocked() error {
	h.pending = false
	if h.done {
		return nil
	}
	return http.NewResponseController(h.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath, for what
// heldWriter does not implement itself (deadlines).
func (h *heldWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

func (h *heldWriter) hold() {
	h.mu.Lock()
	h.holds++
	h.mu.Unlock()
}

func (h *heldWriter) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holds--; h.holds == 0 && h.pending {
		_ = h.flushLocked()
	}
}

// finish marks the stream's handler as returned.
func (h *heldWriter) finish() {
	h.mu.Lock()
	h.done = true
	h.mu.Unlock()
}
