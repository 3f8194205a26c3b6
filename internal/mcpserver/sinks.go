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
	l.buf = b
	if cap(b) > maxKeptBuffer {
		l.buf = nil
	}
	return err
}

// lineSink is the realtime.Sink of a stdio session.
type lineSink struct{ w *lineWriter }

func (s lineSink) Write(ctx context.Context, msgs []realtime.Message) error {
	return s.w.WriteMessages(ctx, msgs)
}

// streamSink is the sink of a Streamable HTTP session, live while its event
// stream is open: a batch of notifications is written to the stream in one
// write and one flush.
type streamSink struct {
	*Sink
	id   string
	live *liveness
}

// Live reports whether the session's event stream is open.
func (s *streamSink) Live() bool { return s.live.stream(s.id) != nil }

// Write writes msgs to the session's open event stream as server-sent
// events, already encoded, in one write and one flush; without an open
// stream it hands them to the SDK's connection.
func (s *streamSink) Write(ctx context.Context, msgs []realtime.Message) error {
	if hw := s.live.stream(s.id); hw != nil {
		return hw.writeEvents(ctx, msgs)
	}
	return s.Sink.Write(ctx, msgs)
}

var errStreamClosed = errors.New("mcpserver: the event stream is closed")

// streamWriter is the response writer of an event stream. Every write and
// flush of the stream goes through its lock, the SDK's (one event per
// write) and writeEvents' batches alike, so events never interleave. Once
// the stream's handler returns, nothing more is written.
type streamWriter struct {
	http.ResponseWriter
	// opened is called when the SDK has written the header of an event
	// stream (on the stream's handler goroutine).
	opened func()
	mu     sync.Mutex
	done   bool
	buf    []byte
}

// writeEvents writes msgs as the SDK writes a message on an event stream
// (event "message", the JSON-RPC notification as data), in one write, and
// flushes. The SDK would validate and compact each message again and flush
// after each.
func (h *streamWriter) writeEvents(ctx context.Context, msgs []realtime.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return errStreamClosed
	}
	b := h.buf[:0]
	for _, m := range msgs {
		b = append(b, "event: message\ndata: "...)
		b = realtime.AppendNotification(b, m)
		b = append(b, '\n')
	}
	_, err := h.ResponseWriter.Write(b)
	h.buf = b
	if cap(b) > maxKeptBuffer {
		h.buf = nil
	}
	if err != nil {
		return err
	}
	return h.flushLocked()
}

// WriteHeader writes the SDK's response header; that of an event stream
// (200, text/event-stream) opens it, a refusal never does.
func (h *streamWriter) WriteHeader(code int) {
	h.mu.Lock()
	h.ResponseWriter.WriteHeader(code)
	h.mu.Unlock()
	if h.opened != nil && code == http.StatusOK && h.Header().Get("Content-Type") == "text/event-stream" {
		h.opened()
	}
}

func (h *streamWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return 0, errStreamClosed
	}
	return h.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController calls to flush.
func (h *streamWriter) FlushError() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.flushLocked()
}

// Flush is for callers that use http.Flusher.
func (h *streamWriter) Flush() { _ = h.FlushError() }

func (h *streamWriter) flushLocked() error {
	if h.done {
		return nil
	}
	return http.NewResponseController(h.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath, for what
// streamWriter does not implement itself (deadlines).
func (h *streamWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// finish marks the stream's handler as returned.
func (h *streamWriter) finish() {
	h.mu.Lock()
	h.done = true
	h.mu.Unlock()
}
