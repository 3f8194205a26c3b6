package mcpserver_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters/catalog"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// The golden tests of the SEP-3415 events extension replay the script of
// each testdata/events_ext/*.txtar file, raw JSON-RPC on stdio and on
// Streamable HTTP, and compare the exchange with its golden section. A
// script's lines are:
//
//	send JSON         write a message; a call other than events/stream
//	                  waits for its response
//	read N            read N more messages (notifications, a stream's end)
//	publish ID TYPE DATA [TAG,...]
//	                  publish an event through the Go API
//	advance DURATION  move the fake clock
//	post TYPE         post an event of TYPE as POST /v1/events does
//	                  (through the catalog)
//	abort ID          (HTTP) end the POST of the request with JSON id ID
//	principal NAME    (first line) the principal of the session; on
//	                  HTTP, the bearer token NAME authenticates it
//
// "@hook" in a message stands for the URL of a webhook receiver on
// loopback that the operator allows (see receiver).
//
// Every wait is bounded. Run with -update to rewrite the golden sections.

// canonicalSent re-encodes a message the script sends, keys sorted.
func canonicalSent(msg string) string {
	var v any
	if json.Unmarshal([]byte(msg), &v) != nil {
		return msg
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// isMCPENotification reports whether msg is one of the MCPE
// notifications (events/event and the like) that the session's principal
// receives for every delivery, the SEP-3415 subscriptions' included: they
// arrive beside the exchange at their own pace, and are left out of it.
func isMCPENotification(msg string) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal([]byte(msg), &m) == nil && len(m.ID) == 0 && strings.HasPrefix(m.Method, "events/")
}

// runScript plays script on w and returns the exchange.
func runScript(t *testing.T, e *env, w *wire, script string) string {
	read := func() {
		raw := w.next(t)
		for isMCPENotification(raw) {
			raw = w.next(t)
		}
		w.note("< " + w.norm.canonical(raw))
	}
	for line := range strings.Lines(script) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "principal ") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		switch verb {
		case "send":
			w.note("> " + canonicalSent(rest))
			rest = strings.ReplaceAll(w.norm.expand(rest), "@hook", e.hookURL)
			w.send(t, rest)
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if err := json.Unmarshal([]byte(rest), &msg); err != nil {
				t.Fatalf("script line %q: %v", line, err)
			}
			if len(msg.ID) > 0 && msg.Method != "events/stream" && msg.Method != "subscriptions/listen" {
				read()
			}
		case "abort":
			if w.abort == nil {
				t.Fatalf("script line %q: abort is for HTTP", line)
			}
			w.abort(t, rest)
			w.note("# " + line)
		case "read":
			var n int
			fmt.Sscan(rest, &n)
			for range n {
				read()
			}
		case "publish":
			f := strings.Fields(rest)
			md := mcpe.Metadata{Priority: mcpe.PriorityNormal}
			if len(f) > 3 {
				md.Tags = strings.Split(f[3], ",")
			}
			if _, err := e.svc.Publish(context.Background(), mcpe.Event{ID: f[0], Type: f[1], Data: json.RawMessage(f[2]), Metadata: md}); err != nil {
				t.Fatalf("publish: %v", err)
			}
			w.note("# " + line)
		case "post":
			// As POST /v1/events does: through the catalog, which lists
			// the type from then on.
			if _, err := e.catalog.Publisher(e.svc).Publish(context.Background(), mcpe.Event{Type: rest, Data: json.RawMessage(`{}`)}); err != nil {
				t.Fatalf("post: %v", err)
			}
			w.note("# " + line)
		case "advance":
			d, err := time.ParseDuration(rest)
			if err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(d)
			w.note("# " + line)
		default:
			t.Fatalf("unknown script line %q", line)
		}
	}
	return w.exchange()
}

func TestEventsExtensionGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/events_ext/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f := parseTxtar(b)
		for _, transport := range []string{"stdio", "stdio-2026", "http", "http-2026"} {
			script, ok := f.get(transport)
			if !ok && transport == "http-2026" {
				// The same exchange as on stdio, over stateless HTTP.
				script, ok = f.get("stdio-2026")
			}
			if !ok {
				continue
			}
			t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar")+"/"+transport, func(t *testing.T) {
				c := clocktest.NewFake(start)
				hook := newReceiver(t, c, secretA, secretB)
				cat := goldenCatalog(t, c)
				e := newEnv(t, envOptions{catalog: cat, clock: c, webhooks: hook.options()})
				e.catalog = cat
				e.hookURL = hook.ts.URL
				principal := ""
				if first, _, _ := strings.Cut(script, "\n"); strings.HasPrefix(first, "principal ") {
					principal = strings.TrimPrefix(first, "principal ")
				}
				var w *wire
				if strings.HasPrefix(transport, "stdio") {
					w = dialStdio(t, e, cmp.Or(principal, mcpserver.LocalPrincipal))
				} else {
					var opts mcpserver.HTTPOptions
					proto := ""
					if transport == "http-2026" {
						// Stateless HTTP needs a token.
						principal = cmp.Or(principal, mcpserver.LocalPrincipal)
						opts.Stateless, proto = true, proto2026
					}
					if principal != "" {
						opts.Tokens = httpapi.NewTokens(map[string]string{principal: principal})
					}
					ts := httptest.NewServer(e.srv.HTTPHandler(opts))
					t.Cleanup(ts.Close)
					w = dialHTTP(t, ts.URL, principal, proto)
				}
				checkGolden(t, file, transport+".golden", runScript(t, e, w, script))
			})
		}
	}
}

// goldenCatalog is the event catalog of the golden tests: three declared
// types, and the types the script posts.
func goldenCatalog(t testing.TB, clk clock.Clock) *catalog.Catalog {
	types := func(ts ...mcpe.EventType) func() []mcpe.EventType { return func() []mcpe.EventType { return ts } }
	store, err := sqlite.Open(context.Background(), sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return catalog.New(catalog.Options{Clock: clk, Store: store, Sources: []catalog.Source{
		{Name: "github", Configured: true, Types: types(mcpe.EventType{Type: "github.push", Description: "Commits were pushed.",
			DataSchema: json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}}}`)})},
		{Name: "mcp", Configured: true, Types: types(mcpe.EventType{Type: "mcp.<name>.log", Description: "A family: left out."})},
		{Name: "demo", Configured: true, Types: types(mcpe.EventType{Type: "demo.ping", Description: "A ping."})},
	}})
}
