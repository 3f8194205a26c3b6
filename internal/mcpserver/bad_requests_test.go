package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
)

// meta2026 is the _meta every request of protocol 2026-07-28 carries.
const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// openRawSession opens a session of principal on transport (stdio,
// stdio-2026, http, http-2026) as the binary serves it, HTTP with the
// deadlines of httpapi.Deadlines (write, or its default when zero), and
// returns it with the _meta its requests carry (followed by a comma, or "").
func openRawSession(t *testing.T, e *env, transport, principal string, write time.Duration) (*wire, string) {
	t.Helper()
	var w *wire
	switch transport {
	case "stdio", "stdio-2026":
		w = dialStdio(t, e, principal)
	default:
		var opts mcpserver.HTTPOptions
		if transport == "http-2026" {
			opts = mcpserver.HTTPOptions{Tokens: httpapi.NewTokens(map[string]string{principal: principal}), Stateless: true}
		}
		ts := httptest.NewServer(httpapi.Deadlines(e.srv.HTTPHandler(opts), 0, write))
		t.Cleanup(ts.Close)
		t.Cleanup(e.srv.EndStreams) // before ts.Close, which waits for them
		w = dialHTTP(t, ts.URL, "", "")
		if transport == "http-2026" {
			w = dialHTTP(t, ts.URL, principal, proto2026)
		}
	}
	if strings.HasSuffix(transport, "-2026") {
		w.send(t, `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{`+meta2026+`}}`)
		w.next(t)
		return w, meta2026 + ","
	}
	w.send(t, initialize2025)
	w.next(t)
	w.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return w, ""
}

// rawMessage is a JSON-RPC message as a client reads it.
type rawMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// nextMatching reads w until a message match accepts, each of which must
// be JSON-RPC 2.0; it fails after 20 others.
func nextMatching(t *testing.T, w *wire, what string, match func(rawMessage) bool) rawMessage {
	t.Helper()
	for range 20 {
		raw := w.next(t)
		if f := strings.SplitN(raw, " ", 4); len(f) == 4 && f[0] == "HTTP" {
			raw = f[3] // an answer in JSON, not in a stream
		}
		var m rawMessage
		if err := json.Unmarshal([]byte(raw), &m); err != nil || m.JSONRPC != "2.0" {
			t.Fatalf("waiting for %s, read %q: not a JSON-RPC message (%v)", what, raw, err)
		}
		if match(m) {
			return m
		}
	}
	t.Fatalf("no %s in 20 messages", what)
	return rawMessage{}
}

// TestBadRequestsAnswered: a request a client (or a model it relays) can
// send that the server refuses is answered with a JSON-RPC error, on every
// transport, and the session serves the next request: neither a resource
// URI with a control character (which the go-sdk quotes into its error's
// data with %q, \x00 and not JSON, so that the answer could not be written
// and the stdio session, the process with it, ended) nor "_meta": null on
// the requests whose _meta the server stamps (a panic in stampMeta) ends
// it. Where such a request is otherwise good, it opens its stream as it
// would without _meta.
func TestBadRequestsAnswered(t *testing.T) {
	refused := []struct{ method, params string }{
		{"resources/read", `{%s"uri":"event://a\u0000b"}`},
		{"resources/read", `{%s"uri":"file:///x\u0007y"}`},
		{"resources/read", `{%s"uri":"x\u001b\u007f\ud800"}`},
		{"events/stream", `{"_meta":null}`},
		{"events/stream", `{"_meta" : null }`},
		{"subscriptions/listen", `{"_meta":null}`},
	}
	for _, transport := range []string{"stdio", "stdio-2026", "http", "http-2026"} {
		t.Run(transport, func(t *testing.T) {
			e := listChangedEnv(t)
			w, meta := openRawSession(t, e, transport, mcpserver.LocalPrincipal, 0)
			next := 1
			call := func(method, params string) string {
				id := fmt.Sprint(next)
				next++
				w.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params))
				return id
			}
			answer := func(id string) rawMessage {
				return nextMatching(t, w, "the answer to "+id, func(m rawMessage) bool { return string(m.ID) == id })
			}
			for _, c := range refused {
				if transport == "http-2026" && c.method == "resources/read" {
					continue // Mcp-Name repeats the URI, and a header holds no control character
				}
				params := c.params
				if strings.Contains(params, "%s") {
					params = fmt.Sprintf(params, meta)
				}
				if m := answer(call(c.method, params)); m.Error == nil || m.Error.Code == 0 || m.Error.Message == "" {
					t.Errorf("%s %s answered %+v; want a JSON-RPC error with a code and a message", c.method, params, m)
				}
				if m := answer(call("tools/list", "{"+strings.TrimSuffix(meta, ",")+"}")); m.Result == nil {
					t.Fatalf("after %s %s, tools/list answered %+v; want its result", c.method, params, m)
				}
			}

			if transport == "http-2026" {
				return // there the go-sdk refuses a request whose _meta has no protocol version
			}
			// With "_meta": null and what they need, streams open.
			id := call("events/stream", `{"_meta":null,"name":"mcpe.filter","arguments":{"eventTypes":["a.*"]}}`)
			m := nextMatching(t, w, "the stream's start", func(m rawMessage) bool { return m.Method == "notifications/events/active" || m.Error != nil })
			if !strings.Contains(string(m.Params), `"io.modelcontextprotocol/subscriptionId":`+id) {
				t.Errorf("events/stream with \"_meta\": null started with %+v; want notifications/events/active for request %s", m, id)
			}
			if transport == "stdio-2026" {
				call("subscriptions/listen", `{"_meta":null,"notifications":{"eventsListChanged":true}}`)
				m := nextMatching(t, w, "the acknowledgement", func(m rawMessage) bool {
					return m.Method == "notifications/subscriptions/acknowledged" || m.Error != nil
				})
				if !strings.Contains(string(m.Params), `"eventsListChanged":true`) {
					t.Errorf("subscriptions/listen with \"_meta\": null acknowledged %+v; want eventsListChanged", m)
				}
			}
			if m := answer(call("tools/list", "{"+strings.TrimSuffix(meta, ",")+"}")); m.Result == nil {
				t.Fatalf("with the streams open, tools/list answered %+v; want its result", m)
			}
		})
	}
}

// TestStreamsOutliveTheWriteDeadline: the stream of an events/stream or a
// subscriptions/listen is the answer to a POST, whose answer has a write
// deadline (httpapi.Deadlines: a minute in the binary, here 200ms). The
// stream stays open past it for as long as its client reads, and what it
// has to say then is delivered, not lost with a cut connection.
func TestStreamsOutliveTheWriteDeadline(t *testing.T) {
	const write = 200 * time.Millisecond
	method := func(name string) func(rawMessage) bool {
		return func(m rawMessage) bool { return m.Method == name }
	}
	t.Run("events/stream", func(t *testing.T) {
		e := listChangedEnv(t)
		w, _ := openRawSession(t, e, "http", mcpserver.LocalPrincipal, write)
		w.send(t, `{"jsonrpc":"2.0","id":1,"method":"events/stream","params":{"name":"mcpe.filter","arguments":{"eventTypes":["a.*"]}}}`)
		nextMatching(t, w, "the stream's start", method("notifications/events/active"))
		time.Sleep(3 * write) // a connection's deadline is wall-clock time
		e.post("a.b")
		nextMatching(t, w, "the event posted past the deadline", method("notifications/events/event"))
	})
	t.Run("events/stream in a batch", func(t *testing.T) {
		e := listChangedEnv(t)
		ts := httptest.NewServer(httpapi.Deadlines(e.srv.HTTPHandler(mcpserver.HTTPOptions{}), 0, write))
		t.Cleanup(ts.Close)
		t.Cleanup(e.srv.EndStreams)
		w := dialHTTP(t, ts.URL, "", "")
		w.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		w.next(t)
		w.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		// Batches are of protocol 2025-03-26, which the wire does not send.
		batch := `[{"jsonrpc":"2.0","id":7,"method":"events/stream","params":{"name":"mcpe.filter","arguments":{"eventTypes":["a.*"]}}}]`
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(batch))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", w.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		stream := streamWire(t, resp.Body)
		nextMatching(t, stream, "the stream's start", method("notifications/events/active"))
		time.Sleep(3 * write)
		e.post("a.b")
		nextMatching(t, stream, "the event posted past the deadline", method("notifications/events/event"))
	})
	t.Run("subscriptions/listen", func(t *testing.T) {
		e := listChangedEnv(t)
		w, meta := openRawSession(t, e, "http-2026", mcpserver.LocalPrincipal, write)
		w.send(t, `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{`+meta+`"notifications":{"eventsListChanged":true}}}`)
		nextMatching(t, w, "the acknowledgement", method("notifications/subscriptions/acknowledged"))
		time.Sleep(3 * write)
		e.post("deploy.failed")
		e.clock.Advance(mcpserver.ListChangedDelay)
		nextMatching(t, w, "the list_changed due past the deadline", method("notifications/events/list_changed"))
	})
}
