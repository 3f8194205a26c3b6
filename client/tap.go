package client

// This file carries MCPE's custom notifications (events/event, events/batch,
// events/subscription_expired) to a go-sdk client, which has no public API
// for them in v1.8: its client drops unknown notifications before any
// middleware sees them (https://github.com/modelcontextprotocol/go-sdk/issues/745,
// and the open PRs that add SendNotification). Tap does it with public API
// only: for Streamable HTTP it taps the SSE bodies at the http.RoundTripper
// (wrapping the connection would disable the SDK's standalone stream), for
// other transports it filters Connection.Read. When the SDK gains a public
// API, Tap shrinks to a handler registration.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TapHandler receives one MCPE notification. It is called from the
// transport's reading goroutine, in arrival order, and must not block for
// long.
type TapHandler func(method string, params json.RawMessage)

// methodPrefix is the prefix of the notifications Tap carries.
const methodPrefix = "events/"

// isEventsMethod reports whether method is one of the MCPE notifications.
func isEventsMethod(method string) bool { return strings.HasPrefix(method, methodPrefix) }

// Tap returns a transport that behaves like t and also hands every MCPE
// notification (method prefix "events/") to h. Any go-sdk client can use it
// to hear events; Client uses it for its own connections.
func Tap(t mcp.Transport, h TapHandler) mcp.Transport {
	if st, ok := t.(*mcp.StreamableClientTransport); ok {
		return wrapHTTP(st, func(rt http.RoundTripper) http.RoundTripper { return &sseTap{base: rt, handler: h} })
	}
	return &filterTransport{Transport: t, handler: h}
}

// wrapHTTP returns a copy of t whose HTTP requests go through wrap(base),
// base being the round tripper t would have used; t is left as it was.
func wrapHTTP(t *mcp.StreamableClientTransport, wrap func(base http.RoundTripper) http.RoundTripper) *mcp.StreamableClientTransport {
	cp := *t
	client := *http.DefaultClient
	if t.HTTPClient != nil {
		client = *t.HTTPClient
	}
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client.Transport = wrap(base)
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

// sseTap watches the server-sent-event bodies of Streamable HTTP responses
// and hands MCPE notifications to the handler. The bytes pass through
// unchanged; the SDK then ignores those notifications.
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

// maxSSELine bounds the buffered part of one SSE line; a longer line is
// passed through without inspection.
const maxSSELine = 16 << 20

// sseReader parses the event stream as the SDK reads it.
type sseReader struct {
	io.ReadCloser
	handler TapHandler
	maxLine int // zero means maxSSELine; tests set less
	line    []byte
	data    []byte
	skip    bool // the current line overflowed maxSSELine
	broken  bool // the current event had such a line: it is not dispatched
}

func (r *sseReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.feed(p[:n])
	return n, err
}

func (r *sseReader) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			r.buffer(b)
			return
		}
		r.buffer(b[:i])
		r.endLine()
		b = b[i+1:]
	}
}

func (r *sseReader) buffer(b []byte) {
	if r.skip {
		return
	}
	limit := r.maxLine
	if limit == 0 {
		limit = maxSSELine
	}
	if len(r.line)+len(b) > limit {
		r.skip, r.line = true, r.line[:0]
		return
	}
	r.line = append(r.line, b...)
}

func (r *sseReader) endLine() {
	line := bytes.TrimSuffix(r.line, []byte("\r"))
	skipped := r.skip
	r.line, r.skip = r.line[:0], false
	switch {
	case skipped:
		r.data, r.broken = r.data[:0], true
	case len(line) == 0:
		r.dispatch()
	case bytes.HasPrefix(line, []byte("data:")):
		v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		if len(r.data) > 0 {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, v...)
	}
}

func (r *sseReader) dispatch() {
	data, broken := r.data, r.broken
	r.data, r.broken = r.data[:0], false
	if broken || len(data) == 0 || !bytes.Contains(data, []byte(methodPrefix)) {
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &msg) != nil || msg.ID != nil || !isEventsMethod(msg.Method) {
		return
	}
	r.handler(msg.Method, bytes.Clone(msg.Params))
}
