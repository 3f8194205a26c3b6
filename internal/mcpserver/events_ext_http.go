package mcpserver

// What the go-sdk v1.8 does not do for the events extension, done around
// it: telling an events/stream handler its request's JSON-RPC id (the
// stream's subscription ID) and, on Streamable HTTP, when the client
// aborted the request; answering an unknown method with JSON-RPC -32601 on
// Streamable HTTP (the SDK answers 400 in plain text under 2025-11-25); and
// answering a request without Mcp-Session-Id other than initialize with
// 400 and a JSON-RPC error (the SDK opens a session for it and answers 200
// with an error of code 0). An upstream fix of the last two, and a request
// id in the context of custom method handlers, would remove this file.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/internal/httpapi"
)

// metaStreamTicket is the private _meta key the server writes into every
// events/stream request it reads (overwriting whatever a client put
// there): the request's id and, on HTTP, a ticket for its abort.
const metaStreamTicket = "mcpe-server/stream"

const methodEventsStream = "events/stream"

// streamTicket is what an events/stream handler learns of its request.
type streamTicket struct {
	id    any
	abort <-chan struct{}
}

// streamTickets maps the tickets of events/stream POSTs in progress to
// their requests' ends (a <-chan struct{}).
var streamTickets sync.Map

// addTicket adds a ticket for done, and returns it with the function that
// removes it.
func addTicket(done <-chan struct{}) (string, func()) {
	key := randomID(16)
	streamTickets.Store(key, done)
	return key, func() { streamTickets.Delete(key) }
}

// streamTicketOf reads the stamp of an events/stream request.
func streamTicketOf(meta mcp.Meta) (streamTicket, bool) {
	v, ok := meta[metaStreamTicket].(map[string]any)
	if !ok || v["id"] == nil {
		return streamTicket{}, false
	}
	t := streamTicket{id: v["id"]}
	if key, _ := v["ticket"].(string); key != "" {
		done, _ := streamTickets.Load(key)
		t.abort, _ = done.(<-chan struct{})
	}
	return t, true
}

// stampParams writes the stamp of an events/stream request into params'
// _meta; params that are not an object are left for the SDK to refuse.
func stampParams(params json.RawMessage, id any, ticket string) json.RawMessage {
	stamp := map[string]any{"id": id}
	if ticket != "" {
		stamp["ticket"] = ticket
	}
	return stampMeta(params, metaStreamTicket, stamp)
}

// stampListen writes the stamp of a subscriptions/listen request: which of
// the filter fields the SDK does not know (eventsListChanged, mcpeEvents)
// it set.
func stampListen(params json.RawMessage) json.RawMessage {
	var p struct {
		Notifications listenFields `json:"notifications"`
	}
	_ = json.Unmarshal(params, &p)
	return stampMeta(params, metaListen, map[string]any{
		fieldEventsListChanged: p.Notifications.EventsListChanged, fieldMCPEEvents: p.Notifications.MCPEEvents})
}

// stampMeta sets _meta[key] of params to stamp, overwriting what a client
// put there; a "_meta": null is taken as none.
func stampMeta(params json.RawMessage, key string, stamp map[string]any) json.RawMessage {
	fields, err := jsonObject(params)
	if err != nil {
		return params
	}
	meta, err := jsonObject(fields["_meta"])
	if err != nil {
		return params
	}
	meta[key], _ = json.Marshal(stamp)
	fields["_meta"], _ = json.Marshal(meta)
	out, err := json.Marshal(fields)
	if err != nil {
		return params
	}
	return out
}

// jsonObject decodes raw, a JSON object, null or nothing, into a map that
// is never nil.
func jsonObject(raw json.RawMessage) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(raw); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if err := json.Unmarshal(t, &m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// stampTransport stamps the events/stream requests read on a transport
// the server connects itself (stdio, in-memory).
type stampTransport struct{ mcp.Transport }

func (t stampTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return stampConn{c}, nil
}

type stampConn struct{ mcp.Connection }

func (c stampConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && err == nil && req.IsCall() {
		switch req.Method {
		case methodEventsStream:
			req.Params = stampParams(req.Params, req.ID.Raw(), "")
		case methodListen:
			req.Params = stampListen(req.Params)
		}
	}
	return m, err
}

// maxPeekBody bounds the POST bodies eventsHTTP reads: the SDK's own limit
// on a request body, which it would answer 413 past.
const maxPeekBody = mcp.DefaultMaxRequestBodyBytes

// eventsHTTP wraps the SDK's Streamable HTTP handler.
func eventsHTTP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPeekBody))
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			writeHTTPJSONRPCError(w, http.StatusRequestEntityTooLarge, json.RawMessage("null"), jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("Request Entity Too Large: a request body may have at most %d bytes", maxPeekBody))
			return
		}
		if err != nil {
			http.Error(w, "failed to read body", http.StatusBadRequest)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.Method == "" {
			// A batch, a response, or not JSON: the SDK's to answer, once
			// the events/stream requests of a batch carry the server's
			// stamp instead of one the client wrote.
			if b, drop := stampBatch(body, r.Context().Done()); b != nil {
				defer drop()
				body = b
				r.ContentLength = int64(len(body))
				w = keepOpen{w}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		id := orNull(msg.ID)
		if r.Header.Get("Mcp-Session-Id") == "" && msg.Method != "initialize" && msg.Method != "server/discover" &&
			r.Header.Get("Mcp-Protocol-Version") < "2026-07-28" {
			writeHTTPJSONRPCError(w, http.StatusBadRequest, id, jsonrpc.CodeInvalidRequest,
				"Bad Request: Mcp-Session-Id header is required for "+msg.Method+"; send initialize first, then the session ID it returns with every request")
			return
		}
		if rawID := callID(msg.ID); rawID != nil && (msg.Method == methodEventsStream || msg.Method == methodListen) {
			params := stampListen(msg.Params)
			if msg.Method == methodEventsStream {
				key, drop := addTicket(r.Context().Done())
				defer drop()
				params = stampParams(msg.Params, rawID, key)
			}
			var full map[string]json.RawMessage
			if json.Unmarshal(body, &full) == nil {
				full["params"] = params
				if b, err := json.Marshal(full); err == nil {
					body = b
				}
			}
			w = keepOpen{w}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		mw := &methodWriter{ResponseWriter: w, id: id, method: msg.Method}
		h.ServeHTTP(mw, r)
		mw.finish()
	})
}

// keepOpen writes an answer that is a stream (events/stream,
// subscriptions/listen), which stays open for as long as its client reads:
// each write has httpapi.DefaultWriteTimeout, where the POST's deadline
// (httpapi.Deadlines) would bound the whole answer and cut the stream.
type keepOpen struct{ http.ResponseWriter }

func (k keepOpen) Write(p []byte) (int, error) {
	_ = http.NewResponseController(k.ResponseWriter).SetWriteDeadline(time.Now().Add(httpapi.DefaultWriteTimeout))
	return k.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController the writer underneath.
func (k keepOpen) Unwrap() http.ResponseWriter { return k.ResponseWriter }

// callID decodes a request's id, a json.Number for a number so that it
// keeps its digits past 2^53; nil when there is none.
func callID(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var id any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&id) != nil {
		return nil
	}
	return id
}

// stampBatch stamps the events/stream requests of a JSON-RPC batch as
// eventsHTTP stamps a single one, all with one ticket for the POST's end
// (done); it answers nil when body is not a batch holding one.
func stampBatch(body []byte, done <-chan struct{}) ([]byte, func()) {
	var elems []json.RawMessage
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '[' || json.Unmarshal(t, &elems) != nil {
		return nil, nil
	}
	key, drop := "", func() {}
	for i, raw := range elems {
		var msg map[string]json.RawMessage
		if json.Unmarshal(raw, &msg) != nil {
			continue // the SDK refuses it
		}
		var method string
		rawID := callID(msg["id"])
		if json.Unmarshal(msg["method"], &method) != nil || method != methodEventsStream || rawID == nil {
			continue
		}
		if key == "" {
			key, drop = addTicket(done)
		}
		msg["params"] = stampParams(msg["params"], rawID, key)
		if b, err := json.Marshal(msg); err == nil {
			elems[i] = b
		}
	}
	if key == "" {
		return nil, nil
	}
	out, err := json.Marshal(elems)
	if err != nil {
		drop()
		return nil, nil
	}
	return out, drop
}

// writeHTTPJSONRPCError answers with a JSON-RPC error response.
func writeHTTPJSONRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int64, message string) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// methodWriter turns the SDK's plain-text 400 for a method it does not
// handle into a JSON-RPC -32601 response; anything else passes through.
type methodWriter struct {
	http.ResponseWriter
	id      json.RawMessage
	method  string
	holding bool
	held    bytes.Buffer
	status  int
}

// notHandled starts the SDK's text for an unknown method
// (jsonrpc2.ErrNotHandled).
const notHandled = "JSON RPC not handled"

func (m *methodWriter) WriteHeader(status int) {
	if status == http.StatusBadRequest && strings.HasPrefix(m.Header().Get("Content-Type"), "text/plain") {
		m.holding, m.status = true, status
		return
	}
	m.ResponseWriter.WriteHeader(status)
}

func (m *methodWriter) Write(p []byte) (int, error) {
	if m.holding {
		return m.held.Write(p)
	}
	return m.ResponseWriter.Write(p)
}

func (m *methodWriter) Flush() {
	if !m.holding {
		_ = http.NewResponseController(m.ResponseWriter).Flush()
	}
}

func (m *methodWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }

func (m *methodWriter) finish() {
	if !m.holding {
		return
	}
	text := m.held.String()
	if strings.HasPrefix(text, notHandled) && !bytes.Equal(m.id, []byte("null")) {
		m.Header().Del("X-Content-Type-Options")
		writeHTTPJSONRPCError(m.ResponseWriter, http.StatusOK, m.id, jsonrpc.CodeMethodNotFound,
			fmt.Sprintf("method not found: %q", m.method))
		return
	}
	m.ResponseWriter.WriteHeader(m.status)
	_, _ = m.ResponseWriter.Write(m.held.Bytes())
}
