package client

// This file carries MCPE's custom notifications (events/event, events/batch,
// events/subscription_expired) to a go-sdk client, which has no public API
// for them in v1.8: its client drops unknown notifications before any
// middleware sees them (https://github.com/modelcontextprotocol/go-sdk/issues/745,
// and the open PRs that add SendNotification). Tap does it with public API
// only: for Streamable HTTP it taps the SSE bodies at the http.RoundTripper
// (wrapping the connection would disable the SDK's standalone stream), for
// a subprocess or an io.Reader it filters the lines before the SDK reads
// them (lines.go), for other transports it filters Connection.Read. When the SDK gains a public
// API, Tap shrinks to a handler registration.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/internal/stdio"
)

// TapHandler receives one MCPE notification. It is called from the
// transport's reading goroutine, in arrival order, and must not block for
// long.
type TapHandler func(method string, params json.RawMessage)

// methodPrefix is the prefix of the MCPE notifications Tap carries; every
// method Tap carries contains it.
const methodPrefix = "events/"

// isEventsMethod reports whether method is one of the MCPE notifications
// (events/*) or of the SEP-3415 push-stream notifications
// (notifications/events/*).
func isEventsMethod(method string) bool {
	return strings.HasPrefix(method, methodPrefix) || strings.HasPrefix(method, notifyEventsPrefix)
}

// Tap returns a transport that behaves like t and also hands every MCPE
// notification (method prefix "events/") and every SEP-3415 push-stream
// notification (prefix "notifications/events/") to h. Any go-sdk client can use it
// to hear events; Client uses it for its own connections.
func Tap(t mcp.Transport, h TapHandler) mcp.Transport {
	switch t := t.(type) {
	case *mcp.StreamableClientTransport:
		return wrapHTTP(t, func(rt http.RoundTripper) http.RoundTripper { return &sseTap{base: rt, handler: h} })
	case *mcp.CommandTransport:
		return &commandTap{t: t, h: h}
	case *mcp.IOTransport:
		return &filterTransport{Transport: stdio.NewTransport(newLineFilter(t.Reader, h), t.Writer, t.MaxLineLength), handler: h}
	}
	return &filterTransport{Transport: t, handler: h}
}

// wrapHTTP returns a copy of t whose HTTP requests go through wrap(base),
// base being the round tripper t would have used; t is left as it was.
func wrapHTTP(t *mcp.StreamableClientTransport, wrap func(base http.RoundTripper) http.RoundTripper) *mcp.StreamableClientTransport {
	cp := *t
	client := *cmp.Or(t.HTTPClient, http.DefaultClient)
	client.Transport = wrap(cmp.Or(client.Transport, http.DefaultTransport))
	cp.HTTPClient = &client
	return &cp
}

// filterTransport takes MCPE notifications out of Connection.Read.
type filterTransport struct {
	mcp.Transport
	handler TapHandler
}

func (t *filterTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &filterConn{Connection: c, handler: t.handler}, nil
}

type filterConn struct {
	mcp.Connection
	handler TapHandler
}

func (c *filterConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			return m, err
		}
		if r, ok := m.(*jsonrpc.Request); ok && !r.IsCall() && isEventsMethod(r.Method) {
			c.handler(r.Method, r.Params)
			continue
		}
		return m, nil
	}
}

// sseTap takes MCPE notifications out of the server-sent-event bodies of
// Streamable HTTP responses and hands them to the handler; the rest of the
// stream passes unchanged. The SDK would decode each notification only to
// drop it, at a cost that caps its client near 20 000 notifications/s
// (lines.go says why).
type sseTap struct {
	base    http.RoundTripper
	handler TapHandler
}

func (t *sseTap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		resp.Body = &sseReader{ReadCloser: resp.Body, handler: t.handler}
	}
	return resp, nil
}

// maxSSELine bounds one SSE line that is inspected; a longer line, and the
// rest of its event, pass without inspection.
const maxSSELine = 16 << 20

// sseReader reads an event stream and returns it without the events that
// carry MCPE notifications, which go to the handler; such an event that had
// an id leaves that id, so that the client's last event ID still moves.
// Other events, comments, and events with an over-long line pass as they
// came. An event is held until its end (the SDK dispatches it only then).
type sseReader struct {
	io.ReadCloser
	handler TapHandler
	maxLine int // zero means maxSSELine; tests set less
	br      *bufio.Reader
	line    []byte // the line being read
	event   []byte // the current event's lines so far
	data    []byte // its data field
	id      []byte // its last id line
	skip    bool   // inside an over-long line: it passes as read
	broken  bool   // the current event had an over-long line: it passes
	out     []byte // what Read returns next
	err     error
}

func (r *sseReader) Read(p []byte) (int, error) {
	if r.br == nil {
		r.br = bufio.NewReaderSize(r.ReadCloser, 64<<10)
	}
	for len(r.out) == 0 {
		if r.err != nil {
			// An unfinished event passes as it came.
			r.out = append(r.event, r.line...)
			r.event, r.line = nil, nil
			if len(r.out) == 0 {
				return 0, r.err
			}
			break
		}
		r.step()
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// step reads up to the end of a line, or a buffer of it.
func (r *sseReader) step() {
	chunk, err := r.br.ReadSlice('\n')
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
		r.err = err
	}
	complete := err == nil
	if r.skip {
		r.out = append(r.out[:0], chunk...)
		r.skip = !complete
		return
	}
	r.line = append(r.line, chunk...)
	content := bytes.TrimSuffix(r.line, []byte("\n"))
	if len(content) > cmp.Or(r.maxLine, maxSSELine) {
		// Too long to inspect: the event passes as it came.
		r.out = append(append(r.out[:0], r.event...), r.line...)
		r.event, r.line, r.data, r.id = r.event[:0], r.line[:0], r.data[:0], nil
		r.broken, r.skip = true, !complete
		return
	}
	if !complete {
		return
	}
	r.endLine(r.line, bytes.TrimSuffix(content, []byte("\r")))
	r.line = r.line[:0]
}

// endLine takes one whole line (raw, and without its end).
func (r *sseReader) endLine(raw, line []byte) {
	if r.broken {
		r.out = append(r.out[:0], raw...)
		r.broken = len(line) != 0
		return
	}
	r.event = append(r.event, raw...)
	switch {
	case len(line) == 0:
		r.dispatch()
	case bytes.HasPrefix(line, []byte("data:")):
		v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		if len(r.data) > 0 {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, v...)
	case bytes.HasPrefix(line, []byte("id:")):
		r.id = append(r.id[:0], raw...)
	}
}

// dispatch ends the current event: it goes to the handler, or on.
func (r *sseReader) dispatch() {
	if params, method, ok := eventsNotification(r.data); ok {
		r.handler(method, params)
		if len(r.id) > 0 {
			r.out = append(append(r.out[:0], r.id...), '\n')
		}
	} else {
		r.out = append(r.out[:0], r.event...)
	}
	r.event, r.data, r.id = r.event[:0], r.data[:0], r.id[:0]
}

// eventsNotification decodes data (one JSON-RPC message, with or without a
// line end) as an MCPE or SEP-3415 push-stream notification, decoded as the
// go-sdk decodes it (stdio.Parse); anything it does not take goes on to the
// SDK as it came.
func eventsNotification(data []byte) (json.RawMessage, string, bool) {
	if !bytes.Contains(data, []byte(methodPrefix)) {
		return nil, "", false
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if stdio.Parse(data, &msg) != nil || msg.ID != nil || !isEventsMethod(msg.Method) {
		return nil, "", false
	}
	return msg.Params, msg.Method, true
}
