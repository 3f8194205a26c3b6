package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters/catalog"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
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

type txtarFile struct {
	comment  string
	sections []txtarSection
}

type txtarSection struct {
	name string
	data string
}

func parseTxtar(b []byte) txtarFile {
	var f txtarFile
	cur := -1
	for line := range strings.SplitAfterSeq(string(b), "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			f.sections = append(f.sections, txtarSection{name: strings.TrimSuffix(strings.TrimPrefix(trimmed, "-- "), " --")})
			cur = len(f.sections) - 1
			continue
		}
		if cur < 0 {
			f.comment += line
		} else {
			f.sections[cur].data += line
		}
	}
	return f
}

func (f txtarFile) get(name string) (string, bool) {
	for _, s := range f.sections {
		if s.name == name {
			return s.data, true
		}
	}
	return "", false
}

func (f *txtarFile) set(name, data string) {
	for i, s := range f.sections {
		if s.name == name {
			f.sections[i].data = data
			return
		}
	}
	f.sections = append(f.sections, txtarSection{name, data})
}

func (f txtarFile) format() []byte {
	var b bytes.Buffer
	b.WriteString(f.comment)
	for _, s := range f.sections {
		fmt.Fprintf(&b, "-- %s --\n%s", s.name, s.data)
	}
	return b.Bytes()
}

// txWire is one raw JSON-RPC connection to the server.
type txWire interface {
	// send writes msg; for a call, the messages that answer it (the
	// response, or a stream's notifications) become readable.
	send(t *testing.T, msg string)
	// next returns the next message, or fails after a bound.
	next(t *testing.T) string
}

// txStdioWire is a session served by ConnectIO on pipes, as on stdio.
type txStdioWire struct {
	in  *io.PipeWriter
	out chan string
}

func newTxStdioWire(t *testing.T, e *env, principal string) *txStdioWire {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	if _, err := e.srv.ConnectIO(context.Background(), inR, outW, principal); err != nil {
		t.Fatal(err)
	}
	w := &txStdioWire{in: inW, out: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			w.out <- sc.Text()
		}
		close(w.out)
	}()
	t.Cleanup(func() { inW.Close(); outW.Close() })
	return w
}

func (w *txStdioWire) send(t *testing.T, msg string) {
	if _, err := io.WriteString(w.in, msg+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (w *txStdioWire) next(t *testing.T) string {
	select {
	case m, ok := <-w.out:
		if !ok {
			t.Fatal("the server closed its output")
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message from the server within 10s")
	}
	return ""
}

// txHTTPWire posts each message to the Streamable HTTP endpoint, with the
// session ID initialize returned; answers, plain JSON or server-sent
// events, are read as they come.
type txHTTPWire struct {
	url     string
	token   string
	session string
	// protocol, when set, goes in Mcp-Protocol-Version of every request
	// (2026-07-28, which has no session).
	protocol string
	out      chan string
	t        *testing.T
	// aborts end the POSTs in progress, by the JSON id of their request,
	// and read says when one's response is read to its end.
	aborts map[string]context.CancelFunc
	read   map[string]chan struct{}
}

// abort ends the POST of the request with JSON id id, as a client that
// closes the connection does, and returns once nothing more of it is read.
func (w *txHTTPWire) abort(t *testing.T, id string) {
	cancel, ok := w.aborts[id]
	if !ok {
		t.Fatalf("abort %s: no such request", id)
	}
	cancel()
	if done := w.read[id]; done != nil {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("abort %s: its response is still read after 10s", id)
		}
	}
}

func newTxHTTPWire(t *testing.T, url string) *txHTTPWire {
	return &txHTTPWire{url: url, out: make(chan string, 1024), t: t}
}

func (w *txHTTPWire) send(t *testing.T, msg string) {
	req, err := http.NewRequest(http.MethodPost, w.url, strings.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if w.token != "" {
		req.Header.Set("Authorization", "Bearer "+w.token)
	}
	if w.session != "" {
		req.Header.Set("Mcp-Session-Id", w.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	if w.protocol != "" {
		// Protocol 2026-07-28 repeats the method (and the name of what a
		// call is for) in headers.
		req.Header.Set("Mcp-Protocol-Version", w.protocol)
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(msg), &m) == nil && m.Method != "" {
			req.Header.Set("Mcp-Method", m.Method)
			switch m.Method {
			case "tools/call", "prompts/get":
				req.Header.Set("Mcp-Name", m.Params.Name)
			case "resources/read":
				req.Header.Set("Mcp-Name", m.Params.URI)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var call struct {
		ID json.RawMessage `json:"id"`
	}
	done := make(chan struct{})
	if json.Unmarshal([]byte(msg), &call) == nil && len(call.ID) > 0 {
		if w.aborts == nil {
			w.aborts, w.read = make(map[string]context.CancelFunc), make(map[string]chan struct{})
		}
		w.aborts[string(call.ID)], w.read[string(call.ID)] = cancel, done
	}
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		w.session = id
	}
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode == http.StatusAccepted {
		resp.Body.Close()
		close(done)
		return
	}
	if !strings.HasPrefix(ct, "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		close(done)
		w.out <- fmt.Sprintf("HTTP %d %s %s", resp.StatusCode, ct, bytes.TrimSpace(body))
		return
	}
	go func() {
		defer close(done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				w.out <- data
			}
		}
	}()
}

func (w *txHTTPWire) next(t *testing.T) string {
	select {
	case m := <-w.out:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message from the server within 10s")
	}
	return ""
}

// aliases names the cursors of an exchange @c1, @c2… in order of
// appearance: a cursor derives from the subscription's ID, and on HTTP
// that from the random session's principal. Scripts send them back by
// name.
type aliases struct {
	byValue map[string]string
	byName  map[string]string
	// ids name the webhook subscriptions' ids @s1, @s2…: they derive from
	// the principal and the receiver's URL, whose port changes.
	ids map[string]string
}

func newAliases() *aliases {
	return &aliases{byValue: map[string]string{}, byName: map[string]string{}, ids: map[string]string{}}
}

func (a *aliases) alias(v string) string {
	if n, ok := a.byValue[v]; ok {
		return n
	}
	n := fmt.Sprintf("@c%d", len(a.byValue)+1)
	a.byValue[v], a.byName[n] = n, v
	return n
}

// expand puts the real cursors in place of their names in msg.
func (a *aliases) expand(msg string) string {
	for i := len(a.byName); i > 0; i-- {
		n := fmt.Sprintf("@c%d", i)
		msg = strings.ReplaceAll(msg, `"`+n+`"`, `"`+a.byName[n]+`"`)
	}
	return msg
}

// canonicalSent re-encodes a message the script sends, keys sorted.
func canonicalSent(msg string) string {
	var v any
	if json.Unmarshal([]byte(msg), &v) != nil {
		return msg
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// canonical re-encodes a JSON message with sorted keys, and blanks what
// changes from run to run.
func (a *aliases) canonical(msg string) string {
	prefix := ""
	if strings.HasPrefix(msg, "HTTP ") {
		i := strings.Index(msg, " {")
		if i < 0 {
			return msg
		}
		prefix, msg = msg[:i+1], msg[i+1:]
	}
	var v any
	if json.Unmarshal([]byte(msg), &v) != nil {
		return prefix + msg
	}
	a.scrub(v)
	b, _ := json.Marshal(v)
	return prefix + string(b)
}

func (a *aliases) scrub(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "version" || k == "instructions" {
				v[k] = "…"
				continue
			}
			if c, ok := x.(string); ok && k == "cursor" && !strings.HasPrefix(c, "@c") {
				v[k] = a.alias(c)
				continue
			}
			if c, ok := x.(string); ok && k == "id" && strings.HasPrefix(c, "sepw") {
				if _, ok := a.ids[c]; !ok {
					a.ids[c] = fmt.Sprintf("@s%d", len(a.ids)+1)
				}
				v[k] = a.ids[c]
				continue
			}
			a.scrub(x)
		}
	case []any:
		for _, x := range v {
			a.scrub(x)
		}
	}
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
func runScript(t *testing.T, e *env, w txWire, script string) string {
	var out strings.Builder
	a := newAliases()
	read := func() {
		raw := w.next(t)
		for isMCPENotification(raw) {
			raw = w.next(t)
		}
		m := a.canonical(raw)
		out.WriteString("< " + m + "\n")
	}
	for line := range strings.Lines(script) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "principal ") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		switch verb {
		case "send":
			out.WriteString("> " + canonicalSent(rest) + "\n")
			rest = strings.ReplaceAll(a.expand(rest), "@hook", e.hookURL)
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
			hw, ok := w.(*txHTTPWire)
			if !ok {
				t.Fatalf("script line %q: abort is for HTTP", line)
			}
			hw.abort(t, rest)
			out.WriteString("# " + line + "\n")
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
			res, err := e.svc.Publish(context.Background(), mcpe.Event{ID: f[0], Type: f[1], Data: json.RawMessage(f[2]), Metadata: md})
			if err != nil {
				t.Fatalf("publish: %v", err)
			}
			_ = res
			out.WriteString("# " + line + "\n")
		case "post":
			// As POST /v1/events does: through the catalog, which lists
			// the type from then on.
			if _, err := e.catalog.Publisher(e.svc).Publish(context.Background(), mcpe.Event{Type: rest, Data: json.RawMessage(`{}`)}); err != nil {
				t.Fatalf("post: %v", err)
			}
			out.WriteString("# " + line + "\n")
		case "advance":
			d, err := time.ParseDuration(rest)
			if err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(d)
			out.WriteString("# " + line + "\n")
		default:
			t.Fatalf("unknown script line %q", line)
		}
	}
	return out.String()
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
		changed := false
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
				var w txWire
				c := clock.NewFake(start)
				hook := newReceiver(t, c, secretA, secretB)
				cat := goldenCatalog(t, c)
				e := newEnv(t, envOptions{catalog: cat, clock: c, webhooks: hook.options()})
				e.catalog = cat
				e.hookURL = hook.ts.URL
				principal := ""
				if first, _, _ := strings.Cut(script, "\n"); strings.HasPrefix(first, "principal ") {
					principal = strings.TrimPrefix(first, "principal ")
				}
				if strings.HasPrefix(transport, "stdio") {
					if principal == "" {
						principal = mcpserver.LocalPrincipal
					}
					w = newTxStdioWire(t, e, principal)
				} else {
					var opts mcpserver.HTTPOptions
					if principal == "" && transport == "http-2026" {
						// Stateless HTTP needs a token.
						principal = mcpserver.LocalPrincipal
					}
					if principal != "" {
						opts.Tokens = httpapi.NewTokens(map[string]string{principal: principal})
					}
					opts.Stateless = transport == "http-2026"
					ts := httptest.NewServer(e.srv.HTTPHandler(opts))
					t.Cleanup(ts.Close)
					hw := newTxHTTPWire(t, ts.URL)
					hw.token = principal
					if transport == "http-2026" {
						hw.protocol = "2026-07-28"
					}
					w = hw
				}
				got := runScript(t, e, w, script)
				name := transport + ".golden"
				want, _ := f.get(name)
				if *update {
					f.set(name, got)
					changed = true
					return
				}
				if got != want {
					t.Errorf("%s: exchange differs from %s (run with -update to accept):\n--- got ---\n%s--- want ---\n%s", file, name, got, want)
				}
			})
		}
		if changed {
			if err := os.WriteFile(file, f.format(), 0o644); err != nil {
				t.Fatal(err)
			}
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
