package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
)

// This file is the one harness of the tests that speak raw JSON-RPC to
// the server, the golden exchanges among them:
//
//   - wire is a connection: dialStdio (as on stdio) or dialHTTP
//     (Streamable HTTP, stateful or stateless), with no handshake; and
//     stdioWire, httpWire and statelessWire, which handshake and record.
//   - what a wire records goes through one normalizer, and check
//     compares it with a section of a txtar file under testdata/.
//   - an exchange is scripted in Go (golden_test.go) or in the
//     txtar file itself (events_ext_golden_test.go, runScript).
//
// Run with -update to rewrite the golden sections.

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/golden and testdata/events_ext")

// wireWait bounds every wait for a message.
const wireWait = 10 * time.Second

// The protocol versions of the golden exchanges.
const (
	proto2025 = "2025-11-25"
	proto2026 = "2026-07-28"
)

// wire is a raw JSON-RPC connection to the server: it writes messages as
// given, reads what the server writes, and records, normalised, what
// passes while recording is on.
type wire struct {
	t     *testing.T
	proto string
	// in carries the server's messages as they come: JSON-RPC, or on
	// HTTP, for an answer that is not an event stream,
	// "HTTP <status> <content type> <body>".
	in    chan string
	write func(msg []byte)
	// stop ends the readers at cleanup, and quit closes it once.
	stop chan struct{}
	quit func()
	// abort ends the POST of the request with that JSON id, once nothing
	// more of its answer is read (HTTP only).
	abort func(t *testing.T, id string)
	// session is the Mcp-Session-Id initialize returned (stateful HTTP).
	session   string
	stateless bool

	mu        sync.Mutex
	log       []string
	recording bool
	norm      normalizer
	// hide, when set, keeps the messages it matches out of the record:
	// those whose arrival races with the exchange.
	hide   func(map[string]any) bool
	nextID int
	// held are hidden messages read while waiting for another, for a
	// later await.
	held []string
}

func newWire(t *testing.T, proto string) *wire {
	w := &wire{t: t, proto: proto, in: make(chan string, 1024), stop: make(chan struct{}), norm: newNormalizer()}
	w.quit = sync.OnceFunc(func() { close(w.stop) })
	t.Cleanup(w.quit)
	return w
}

// deliver hands a message of the server to the reader; false once the
// test is over.
func (w *wire) deliver(msg string) bool {
	select {
	case w.in <- msg:
		return true
	case <-w.stop:
		return false
	}
}

// send writes msg as given, recording it.
func (w *wire) send(t *testing.T, msg string) {
	t.Helper()
	w.record(">", msg)
	w.write([]byte(msg))
}

// next returns the next message of the server, or fails after wireWait.
func (w *wire) next(t *testing.T) string {
	t.Helper()
	select {
	case m, ok := <-w.in:
		if !ok {
			t.Fatal("the server closed its output")
		}
		return m
	case <-time.After(wireWait):
		t.Fatalf("no message from the server within %v", wireWait)
	}
	return ""
}

func (w *wire) record(dir, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.recording {
		w.log = append(w.log, dir+" "+w.norm.canonical(msg))
	}
}

// note adds a line to the exchange whether recording or not.
func (w *wire) note(line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log = append(w.log, line)
}

// setRecording turns recording on or off.
func (w *wire) setRecording(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recording = on
}

// comment adds a line to the exchange that says what comes next.
func (w *wire) comment(text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.recording {
		w.log = append(w.log, "# "+text)
	}
}

// sendMsg writes one message built in Go.
func (w *wire) sendMsg(msg map[string]any) {
	w.t.Helper()
	msg["jsonrpc"] = "2.0"
	b, err := json.Marshal(msg)
	if err != nil {
		w.t.Fatal(err)
	}
	w.send(w.t, string(b))
}

// withMeta adds the per-request _meta that protocol 2026-07-28 asks of
// every request.
func (w *wire) withMeta(params map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	if w.proto == proto2026 {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    proto2026,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "golden", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
	}
	return params
}

// request sends a request and returns its ID.
func (w *wire) request(method string, params map[string]any) int {
	w.mu.Lock()
	w.nextID++
	id := w.nextID
	w.mu.Unlock()
	w.sendMsg(map[string]any{"id": id, "method": method, "params": w.withMeta(params)})
	return id
}

// call sends a request and waits for its response.
func (w *wire) call(method string, params map[string]any) map[string]any {
	w.t.Helper()
	id := w.request(method, params)
	return w.await(fmt.Sprintf("the response to %s", method), func(m map[string]any) bool {
		return m["method"] == nil && m["id"] == float64(id)
	})
}

// cancel ends a request in progress: on stateless HTTP by aborting its
// POST, which then has no response; elsewhere with notifications/cancelled.
func (w *wire) cancel(id int) {
	w.t.Helper()
	if w.stateless {
		w.abort(w.t, fmt.Sprint(id))
		return
	}
	w.sendMsg(map[string]any{"method": "notifications/cancelled", "params": map[string]any{"requestId": id}})
}

// decode parses a message of the server; an HTTP answer that is not a
// stream is its body.
func (w *wire) decode(raw string) map[string]any {
	w.t.Helper()
	if strings.HasPrefix(raw, "HTTP ") {
		if i := strings.Index(raw, " {"); i >= 0 {
			raw = raw[i+1:]
		}
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		w.t.Fatalf("server wrote %q: %v", raw, err)
	}
	return m
}

// await reads messages, recording each, until one satisfies match.
func (w *wire) await(what string, match func(map[string]any) bool) map[string]any {
	w.t.Helper()
	w.mu.Lock()
	for i, raw := range w.held {
		if m := w.decode(raw); match(m) {
			w.held = append(w.held[:i], w.held[i+1:]...)
			w.mu.Unlock()
			return m
		}
	}
	w.mu.Unlock()
	deadline := time.Now().Add(wireWait)
	for {
		var raw string
		select {
		case raw = <-w.in:
		case <-time.After(time.Until(deadline)):
			w.t.Fatalf("no %s within %v", what, wireWait)
		}
		m := w.decode(raw)
		hidden := w.hide != nil && w.hide(m)
		if !hidden {
			w.record("<", raw)
		}
		if match(m) {
			return m
		}
		if hidden {
			w.mu.Lock()
			w.held = append(w.held, raw)
			w.mu.Unlock()
		}
	}
}

// noneBefore sends a request and checks that nothing bad arrives before
// its response.
func (w *wire) noneBefore(method string, params map[string]any, bad func(map[string]any) bool) {
	w.t.Helper()
	id := w.request(method, params)
	w.await("the response to "+method, func(m map[string]any) bool {
		if bad(m) {
			w.t.Errorf("unexpected message: %v", m)
		}
		return m["method"] == nil && m["id"] == float64(id)
	})
}

// exchange is what the wire recorded, a line each.
func (w *wire) exchange() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.log) == 0 {
		return ""
	}
	return strings.Join(w.log, "\n") + "\n"
}

// check compares the recorded exchange with section name of
// testdata/golden/file.txtar.
func (w *wire) check(file, name string) {
	w.t.Helper()
	checkGolden(w.t, "testdata/golden/"+file+".txtar", name, w.exchange())
}

// checkGolden compares got with the section name of the txtar file path,
// or with -update writes it there.
func checkGolden(t *testing.T, path, name, got string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !(*update && os.IsNotExist(err)) {
		t.Fatal(err)
	}
	f := parseTxtar(b)
	if *update {
		f.set(name, got)
		if err := os.WriteFile(path, f.format(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, ok := f.get(name)
	if !ok {
		t.Fatalf("%s has no section %q (run go test -run %s -update to write it)", path, name, t.Name())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exchange %s %s mismatch (-want +got), run with -update to accept:\n%s", path, name, diff)
	}
}

// A txtar file is a comment followed by sections, each headed by a line
// "-- name --".
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

// normalizer re-encodes a message with sorted keys and stands in for what
// changes from run to run: cursors become @c1, @c2… and webhook
// subscription ids @s1, @s2… in order of appearance (a script sends
// cursors back by name), versions and instructions "…". An exchange on the
// wall clock with random IDs (wallClock) has its times, UUIDs, secrets and
// session principals replaced by placeholders too.
type normalizer struct {
	wallClock bool
	cursors   map[string]string // cursor → alias
	byAlias   map[string]string // alias → cursor
	ids       map[string]string
}

func newNormalizer() normalizer {
	return normalizer{cursors: map[string]string{}, byAlias: map[string]string{}, ids: map[string]string{}}
}

var (
	uuidRE    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	timeRE    = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
	secretRE  = regexp.MustCompile(`^whsec_[A-Za-z0-9+/=]+$`)
	subURIRE  = regexp.MustCompile(`^subscription://[0-9a-f-]{36}$`)
	sourceRE  = regexp.MustCompile(`^[0-9a-f]{16}:`)
	inlineIDs = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
)

// canonical normalises msg, a JSON-RPC message or an HTTP answer.
func (n *normalizer) canonical(msg string) string {
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
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(n.scrub("", v)); err != nil {
		return prefix + msg
	}
	return prefix + strings.TrimSpace(b.String())
}

func (n *normalizer) scrub(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "version" || k == "instructions" {
				x[k] = "…"
			} else {
				x[k] = n.scrub(k, e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = n.scrub("", e)
		}
	case string:
		switch {
		case key == "cursor" && !strings.HasPrefix(x, "@c"):
			if _, ok := n.cursors[x]; !ok {
				a := fmt.Sprintf("@c%d", len(n.cursors)+1)
				n.cursors[x], n.byAlias[a] = a, x
			}
			return n.cursors[x]
		case key == "id" && strings.HasPrefix(x, "sepw"):
			if _, ok := n.ids[x]; !ok {
				n.ids[x] = fmt.Sprintf("@s%d", len(n.ids)+1)
			}
			return n.ids[x]
		case !n.wallClock:
		case uuidRE.MatchString(x):
			return "<uuid>"
		case timeRE.MatchString(x):
			return "<time>"
		case secretRE.MatchString(x):
			return "<whsec>"
		case subURIRE.MatchString(x):
			return "subscription://<uuid>"
		case sourceRE.MatchString(x):
			return sourceRE.ReplaceAllString(x, "<principal>:")
		default:
			return inlineIDs.ReplaceAllString(x, "<uuid>")
		}
	}
	return v
}

// expand puts the real cursors in place of their aliases in msg.
func (n *normalizer) expand(msg string) string {
	for i := len(n.byAlias); i > 0; i-- {
		a := fmt.Sprintf("@c%d", i)
		msg = strings.ReplaceAll(msg, `"`+a+`"`, `"`+n.byAlias[a]+`"`)
	}
	return msg
}

// handshake opens the session as the protocol asks, unrecorded, then
// turns recording on.
func (w *wire) handshake() {
	w.t.Helper()
	if w.proto == proto2026 {
		w.call("server/discover", nil)
	} else {
		w.call("initialize", map[string]any{"protocolVersion": proto2025, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "golden", "version": "1"}})
		w.sendMsg(map[string]any{"method": "notifications/initialized"})
	}
	w.setRecording(true)
}

// dialStdio connects a wire to the server as stdio does, for principal,
// with no handshake.
func dialStdio(t *testing.T, e *env, principal string) *wire {
	t.Helper()
	w := newWire(t, proto2025)
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ss, err := e.srv.ConnectIO(context.Background(), sr, sw, principal)
	if err != nil {
		t.Fatal(err)
	}
	var wmu sync.Mutex
	w.write = func(b []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		if _, err := cw.Write(append(b, '\n')); err != nil {
			t.Errorf("write to the server: %v", err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(w.in)
		sc := bufio.NewScanner(cr)
		sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
		for sc.Scan() && w.deliver(sc.Text()) {
		}
	}()
	t.Cleanup(func() {
		w.quit()
		cw.Close()
		ss.Close()
		cr.Close()
		<-done
	})
	return w
}

// stdioWire is dialStdio under protocol proto, handshaken.
func stdioWire(t *testing.T, e *env, principal, proto string) *wire {
	t.Helper()
	w := dialStdio(t, e, principal)
	w.proto = proto
	w.handshake()
	return w
}

// dialHTTP connects a wire, with no handshake, to the Streamable HTTP
// endpoint at url, with token as bearer when set. Under proto2026 it is
// stateless: each POST repeats the method (and what a call is for) in
// headers; otherwise it sends the session ID initialize returned. Each
// POST's answer is read as it comes.
func dialHTTP(t *testing.T, url, token, proto string) *wire {
	t.Helper()
	w := newWire(t, proto2025)
	if proto == proto2026 {
		w.proto, w.stateless = proto, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		w.quit()
		cancel()
		wg.Wait()
	})
	var mu sync.Mutex
	aborts := map[string]context.CancelFunc{}
	read := map[string]chan struct{}{}
	w.abort = func(t *testing.T, id string) {
		t.Helper()
		mu.Lock()
		abort, done := aborts[id], read[id]
		mu.Unlock()
		if abort == nil {
			t.Fatalf("abort %s: no such request", id)
		}
		abort()
		select {
		case <-done:
		case <-time.After(wireWait):
			t.Fatalf("abort %s: its response is still read after %v", id, wireWait)
		}
	}
	w.write = func(b []byte) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"params"`
		}
		json.Unmarshal(b, &msg) // a batch, or not JSON: sent as it is
		rctx, abort := context.WithCancel(ctx)
		done := make(chan struct{})
		if len(msg.ID) > 0 {
			mu.Lock()
			aborts[string(msg.ID)], read[string(msg.ID)] = abort, done
			mu.Unlock()
		}
		req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if w.stateless {
			// Protocol 2026-07-28 repeats the method (and the name of
			// what a call is for) in headers.
			req.Header.Set("Mcp-Protocol-Version", proto2026)
			if msg.Method != "" {
				req.Header.Set("Mcp-Method", msg.Method)
			}
			switch msg.Method {
			case "tools/call", "prompts/get":
				req.Header.Set("Mcp-Name", msg.Params.Name)
			case "resources/read":
				req.Header.Set("Mcp-Name", msg.Params.URI)
			}
		} else if w.session != "" {
			req.Header.Set("Mcp-Session-Id", w.session)
			req.Header.Set("Mcp-Protocol-Version", proto2025)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			abort()
			close(done)
			t.Errorf("POST: %v", err)
			return
		}
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			w.session = id
		}
		ct := resp.Header.Get("Content-Type")
		if resp.StatusCode == http.StatusAccepted || !strings.HasPrefix(ct, "text/event-stream") {
			defer close(done)
			defer abort()
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				body, _ := io.ReadAll(resp.Body)
				w.deliver(fmt.Sprintf("HTTP %d %s %s", resp.StatusCode, ct, bytes.TrimSpace(body)))
			}
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			defer abort()
			defer resp.Body.Close()
			readSSE(resp.Body, w.deliver)
		}()
	}
	return w
}

// httpWire connects a wire to the server over Streamable HTTP (stateful,
// protocol 2025-11-25), handshaken, with its standalone event stream open.
func httpWire(t *testing.T, e *env) *wire {
	t.Helper()
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	w := dialHTTP(t, hs.URL, "", proto2025)
	w.handshake()
	// The standalone stream, for notifications.
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", w.session)
	req.Header.Set("Mcp-Protocol-Version", proto2025)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		readSSE(resp.Body, w.deliver)
	}()
	t.Cleanup(func() {
		w.quit()
		cancel()
		<-done
	})
	return w
}

// statelessWire connects a wire to the server over stateless Streamable
// HTTP (protocol 2026-07-28), with principal's bearer token, handshaken:
// each message is a POST of its own, answered as it comes.
func statelessWire(t *testing.T, e *env, principal string) *wire {
	t.Helper()
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{
		Tokens: httpapi.NewTokens(map[string]string{principal + "-token": principal}), Stateless: true}))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	w := dialHTTP(t, hs.URL, principal+"-token", proto2026)
	w.handshake()
	return w
}

// streamWire is a wire that only reads the server-sent events of r.
func streamWire(t *testing.T, r io.Reader) *wire {
	w := newWire(t, proto2025)
	w.write = func([]byte) { t.Error("a stream wire only reads") }
	go readSSE(r, w.deliver)
	return w
}

// listenMCPE opens, unrecorded, the subscriptions/listen with mcpeEvents
// on which a stateless HTTP client hears its subscriptions' deliveries.
func (w *wire) listenMCPE() {
	w.t.Helper()
	w.setRecording(false)
	w.request("subscriptions/listen", map[string]any{"notifications": map[string]any{"mcpeEvents": true}})
	w.await("the acknowledgement of mcpeEvents", func(m map[string]any) bool {
		return m["method"] == "notifications/subscriptions/acknowledged"
	})
	w.setRecording(true)
}

// readSSE hands the data of each server-sent event of r to deliver, until
// r ends or deliver says stop.
func readSSE(r io.Reader, deliver func(string) bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):]...)
		case line == "" && len(data) > 0:
			if !deliver(string(data)) {
				return
			}
			data = nil
		}
	}
}
