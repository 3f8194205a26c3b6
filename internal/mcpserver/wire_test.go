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
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
)

var update = flag.Bool("update", false, "rewrite the golden JSON-RPC exchanges in testdata/golden and testdata/events_ext")

// wireWait bounds every wait for a message.
const wireWait = 10 * time.Second

// wire is a raw JSON-RPC client of the server, for golden exchanges: it
// writes requests by hand and records, normalised, every message that
// passes while recording is on.
type wire struct {
	t     *testing.T
	proto string
	in    chan json.RawMessage
	write func(msg []byte)

	mu        sync.Mutex
	log       []string
	recording bool
	// hide, when set, keeps the messages it matches out of the record:
	// those whose arrival races with the exchange.
	hide   func(map[string]any) bool
	nextID int
	// held are hidden messages read while waiting for another, for a
	// later await.
	held []json.RawMessage
	// cancel ends a request in progress; on stateless HTTP by aborting
	// its POST, which then has no response.
	cancel    func(id int)
	stateless bool
}

// The protocol versions of the golden exchanges.
const (
	proto2025 = "2025-11-25"
	proto2026 = "2026-07-28"
)

func newWire(t *testing.T, proto string) *wire {
	w := &wire{t: t, proto: proto, in: make(chan json.RawMessage, 256)}
	w.cancel = func(id int) {
		w.send(map[string]any{"method": "notifications/cancelled", "params": map[string]any{"requestId": id}})
	}
	return w
}

func (w *wire) record(dir string, msg []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.recording {
		w.log = append(w.log, dir+" "+normalize(w.t, msg))
	}
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

// send writes one message.
func (w *wire) send(msg map[string]any) {
	w.t.Helper()
	msg["jsonrpc"] = "2.0"
	b, err := json.Marshal(msg)
	if err != nil {
		w.t.Fatal(err)
	}
	w.record(">", b)
	w.write(b)
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
	w.send(map[string]any{"id": id, "method": method, "params": w.withMeta(params)})
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

// await reads messages, recording each, until one satisfies match.
func (w *wire) await(what string, match func(map[string]any) bool) map[string]any {
	w.t.Helper()
	deadline := time.NewTimer(wireWait)
	defer deadline.Stop()
	w.mu.Lock()
	for i, raw := range w.held {
		var m map[string]any
		if json.Unmarshal(raw, &m) == nil && match(m) {
			w.held = append(w.held[:i], w.held[i+1:]...)
			w.mu.Unlock()
			return m
		}
	}
	w.mu.Unlock()
	for {
		var raw json.RawMessage
		select {
		case raw = <-w.in:
		case <-deadline.C:
			w.t.Fatalf("no %s within %v", what, wireWait)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			w.t.Fatalf("server wrote %q: %v", raw, err)
		}
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

// check compares the recorded exchange with testdata/golden/name.txt.
func (w *wire) check(name string) {
	w.t.Helper()
	w.mu.Lock()
	got := strings.Join(w.log, "\n") + "\n"
	w.mu.Unlock()
	path := filepath.Join("testdata", "golden", name+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			w.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		w.t.Fatalf("%v (run go test -run %s -update to write it)", err, w.t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		w.t.Errorf("exchange %s mismatch (-want +got):\n%s", path, diff)
	}
}

var (
	uuidRE    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	timeRE    = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
	secretRE  = regexp.MustCompile(`^whsec_[A-Za-z0-9+/=]+$`)
	subURIRE  = regexp.MustCompile(`^subscription://[0-9a-f-]{36}$`)
	sourceRE  = regexp.MustCompile(`^[0-9a-f]{16}:`)
	inlineIDs = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
)

// normalize re-encodes a message with sorted keys, with what changes from
// run to run (IDs, times, secrets) replaced by placeholders.
func normalize(t *testing.T, msg []byte) string {
	var v any
	if err := json.Unmarshal(msg, &v); err != nil {
		t.Fatalf("server wrote %q: %v", msg, err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			switch {
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
			}
			return inlineIDs.ReplaceAllString(x, "<uuid>")
		}
		return v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(walk(v)); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(b.String())
}

// handshake opens the session as the protocol asks, unrecorded.
func (w *wire) handshake() {
	w.t.Helper()
	if w.proto == proto2026 {
		w.call("server/discover", nil)
	} else {
		w.call("initialize", map[string]any{"protocolVersion": proto2025, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "golden", "version": "1"}})
		w.send(map[string]any{"method": "notifications/initialized"})
	}
	w.mu.Lock()
	w.recording = true
	w.mu.Unlock()
}

// stdioWire connects a wire to the server as stdio does, for principal.
func stdioWire(t *testing.T, e *env, principal, proto string) *wire {
	t.Helper()
	w := newWire(t, proto)
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
		sc := bufio.NewScanner(cr)
		sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
		for sc.Scan() {
			w.in <- append(json.RawMessage(nil), sc.Bytes()...)
		}
	}()
	t.Cleanup(func() {
		cw.Close()
		ss.Close()
		cr.Close()
		<-done
	})
	w.handshake()
	return w
}

// httpWire connects a wire to the server over Streamable HTTP (stateful,
// protocol 2025-11-25), with its standalone event stream open.
func httpWire(t *testing.T, e *env) *wire {
	t.Helper()
	w := newWire(t, proto2025)
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		hs.CloseClientConnections()
		hs.Close()
	})
	var session string
	w.write = func(b []byte) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", proto2025)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Errorf("POST: %v", err)
			return
		}
		defer resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			session = id
		}
		switch ct := resp.Header.Get("Content-Type"); {
		case resp.StatusCode == http.StatusAccepted:
		case strings.HasPrefix(ct, "text/event-stream"):
			readSSE(resp.Body, w.in)
		case strings.HasPrefix(ct, "application/json"):
			body, _ := io.ReadAll(resp.Body)
			w.in <- body
		default:
			body, _ := io.ReadAll(resp.Body)
			t.Errorf("POST answered %s %q: %s", resp.Status, ct, body)
		}
	}
	w.handshake()
	// The standalone stream, for notifications.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", proto2025)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer resp.Body.Close()
		readSSE(resp.Body, w.in)
	}()
	return w
}

// statelessWire connects a wire to the server over stateless Streamable
// HTTP (protocol 2026-07-28), with principal's bearer token: each message
// is a POST of its own, answered as it comes.
func statelessWire(t *testing.T, e *env, principal string) *wire {
	t.Helper()
	w := newWire(t, proto2026)
	w.stateless = true
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{
		Tokens: httpapi.NewTokens(map[string]string{principal + "-token": principal}), Stateless: true}))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		hs.CloseClientConnections()
		hs.Close()
	})
	var mu sync.Mutex
	aborts := map[int]context.CancelFunc{}
	read := map[int]chan struct{}{}
	w.cancel = func(id int) {
		mu.Lock()
		abort, done := aborts[id], read[id]
		mu.Unlock()
		if abort == nil {
			t.Fatalf("cancel %d: no such request", id)
		}
		abort()
		// Nothing more of its response is read after this.
		select {
		case <-done:
		case <-time.After(wireWait):
			t.Fatalf("cancel %d: its response is still read after %v", id, wireWait)
		}
	}
	w.write = func(b []byte) {
		var msg struct {
			ID     *int   `json:"id"`
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"params"`
		}
		if err := json.Unmarshal(b, &msg); err != nil {
			t.Fatal(err)
		}
		rctx, abort := context.WithCancel(ctx)
		done := make(chan struct{})
		if msg.ID != nil {
			mu.Lock()
			aborts[*msg.ID], read[*msg.ID] = abort, done
			mu.Unlock()
		}
		req, err := http.NewRequestWithContext(rctx, http.MethodPost, hs.URL, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+principal+"-token")
		req.Header.Set("Mcp-Protocol-Version", proto2026)
		req.Header.Set("Mcp-Method", msg.Method)
		switch msg.Method {
		case "tools/call", "prompts/get":
			req.Header.Set("Mcp-Name", msg.Params.Name)
		case "resources/read":
			req.Header.Set("Mcp-Name", msg.Params.URI)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			abort()
			close(done)
			t.Errorf("POST: %v", err)
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			defer abort()
			defer resp.Body.Close()
			switch ct := resp.Header.Get("Content-Type"); {
			case resp.StatusCode == http.StatusAccepted:
			case strings.HasPrefix(ct, "text/event-stream"):
				readSSE(resp.Body, w.in)
			case strings.HasPrefix(ct, "application/json"):
				body, _ := io.ReadAll(resp.Body)
				w.in <- body
			default:
				body, _ := io.ReadAll(resp.Body)
				t.Errorf("POST answered %s %q: %s", resp.Status, ct, body)
			}
		}()
	}
	w.handshake()
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

// readSSE sends the data of each server-sent event of r to out.
func readSSE(r io.Reader, out chan<- json.RawMessage) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):]...)
		case line == "" && len(data) > 0:
			out <- data
			data = nil
		}
	}
}
