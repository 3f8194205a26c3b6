package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/internal/pgtest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// binary is the mcpe-server built once for these tests; builtAt is the
// commit it was built at, when this is a git clone.
var binary, builtAt string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpe-server-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "mcpe-server")
	// -buildvcs=auto: the version names the commit when this is a clone,
	// whatever GOFLAGS says.
	if head, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		builtAt = strings.TrimSpace(string(head))
	}
	build := exec.Command("go", "build", "-buildvcs=auto", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build mcpe-server:", err)
		os.Exit(1)
	}
	code := pgtest.Main(m) // stops the PostgreSQL cluster if a test started one
	os.RemoveAll(dir)
	os.Exit(code)
}

// logWatcher collects a process's stderr and finds the HTTP address in it.
type logWatcher struct {
	mu    sync.Mutex
	lines []string
	addr  chan string
}

var listenLine = regexp.MustCompile(`msg="HTTP server listening" addr=(\S+)`)

func watchLog(t *testing.T, r io.Reader) *logWatcher {
	w := &logWatcher{addr: make(chan string, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			w.mu.Lock()
			w.lines = append(w.lines, line)
			w.mu.Unlock()
			if m := listenLine.FindStringSubmatch(line); m != nil {
				w.addr <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", w.String())
		}
	})
	return w
}

func (w *logWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

func (w *logWatcher) waitAddr(t *testing.T) string {
	t.Helper()
	select {
	case a := <-w.addr:
		return a
	case <-time.After(mcpetest.Wait):
		t.Fatalf("the server did not report its HTTP address; log:\n%s", w.String())
		return ""
	}
}

// startStdio starts the binary as an MCP stdio server that also serves HTTP
// on a free loopback port, and connects a client to it.
func startStdio(t *testing.T, db string, opts *mcp.ClientSessionOptions, args ...string) (*mcpetest.Client, string) {
	c, base, _ := startStdioProcess(t, db, opts, args...)
	return c, base
}

// startStdioProcess is startStdio that also returns the server process.
func startStdioProcess(t *testing.T, db string, opts *mcp.ClientSessionOptions, args ...string) (*mcpetest.Client, string, *exec.Cmd) {
	t.Helper()
	return startStdioGated(t, db, opts, nil, args...)
}

// startStdioGated is startStdioProcess whose client reads only while gate
// (when not nil) is open.
func startStdioGated(t *testing.T, db string, opts *mcp.ClientSessionOptions, gate *mcpetest.Gate, args ...string) (*mcpetest.Client, string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"--stdio", "--http", "127.0.0.1:0", "--db", db}, args...)...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	logs := watchLog(t, pr)
	var tr mcp.Transport = &mcp.CommandTransport{Command: cmd}
	if gate != nil {
		tr = gate.Transport(tr)
	}
	c := mcpetest.Connect(t, tr, opts)
	addr := logs.waitAddr(t)
	t.Cleanup(func() { pw.Close() })
	return c, "http://" + addr, cmd
}

// startHTTPServer starts the binary serving HTTP only and returns its base URL,
// the process, and a channel that yields its exit.
func startHTTPServer(t *testing.T, args ...string) (string, *exec.Cmd, <-chan error) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"--http", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "mcpe.db")}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := watchLog(t, stderr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() { done <- cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	return "http://" + logs.waitAddr(t), cmd, done
}

// post sends an event to /v1/events and returns the status and body.
func post(t *testing.T, base, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/events", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return do(t, req, token)
}

// do sends req, with token as a bearer token when given, and returns the
// status and body.
func do(t *testing.T, req *http.Request, token string) (int, string) {
	t.Helper()
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// cli runs the binary with args and returns its exit code, stdout and stderr.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcpetest.Wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func TestStdioEndToEnd(t *testing.T) {
	for _, p := range []struct {
		name string
		opts *mcp.ClientSessionOptions
	}{{"2026-07-28", nil}, {"2025-11-25", &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}}} {
		t.Run(p.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "mcpe.db")
			c, base := startStdio(t, db, p.opts)

			var caps struct {
				Capabilities struct {
					Events *mcpe.Capability `json:"events"`
				} `json:"capabilities"`
			}
			if err := json.Unmarshal(c.InitializeRaw(), &caps); err != nil || caps.Capabilities.Events == nil {
				t.Fatalf("no capabilities.events in %s (%v)", c.InitializeRaw(), err)
			}

			sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"deploy.*"}}})
			if code, body := post(t, base, "", `{"type": "build.done", "data": {}}`); code != http.StatusAccepted {
				t.Fatalf("POST: %d %s", code, body)
			}
			code, body := post(t, base, "", `{"type": "deploy.failed", "data": {"service": "api"}, "metadata": {"priority": "critical", "tags": ["prod"]}}`)
			if code != http.StatusAccepted {
				t.Fatalf("POST: %d %s", code, body)
			}
			var accepted struct{ ID string }
			json.Unmarshal([]byte(body), &accepted)
			params, ev := c.NextEvent(t)
			if params.SubscriptionID != sub.ID || ev.ID != accepted.ID || ev.Type != "deploy.failed" ||
				string(ev.Data) != `{"service":"api"}` || ev.Metadata.Priority != mcpe.PriorityCritical {
				t.Fatalf("got %+v %+v; want deploy.failed %s for %s", params, ev, accepted.ID, sub.ID)
			}

			// The CLI publishes through the same endpoint.
			code, out, stderr := cli(t, "publish", "--url", base, "--type", "deploy.rolled_back", "--data", `{"to": "v1"}`, "--tag", "prod")
			if code != 0 {
				t.Fatalf("publish exited %d: %s", code, stderr)
			}
			if _, ev := c.NextEvent(t); ev.ID != strings.TrimSpace(out) || ev.Type != "deploy.rolled_back" {
				t.Fatalf("got %s %s; want the published %s", ev.Type, ev.ID, out)
			}
		})
	}
}

func TestStdioRestartKeepsSubscriptionsAndInbox(t *testing.T) {
	db := filepath.Join(t.TempDir(), "mcpe.db")
	c, base := startStdio(t, db, nil)
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"ci.*"}}})
	post(t, base, "", `{"type": "ci.failed", "data": {"run": 1}}`)
	c.NextEvent(t)
	c.Session.Close() // the host quits: stdin closes and the server exits

	c2, base2 := startStdio(t, db, nil)
	var list mcpe.ListResult
	c2.MustCall(t, "events_list", map[string]any{}, &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].ID != sub.ID || list.Subscriptions[0].DeliveredCount != 1 {
		t.Fatalf("after restart: %+v", list.Subscriptions)
	}
	var poll mcpe.PollResult
	c2.MustCall(t, "events_poll", map[string]any{}, &poll)
	if len(poll.Items) != 1 || !strings.Contains(string(poll.Items[0].Event), `"run":1`) {
		t.Fatalf("inbox after restart: %+v", poll.Items)
	}
	post(t, base2, "", `{"type": "ci.failed", "data": {"run": 2}}`)
	if _, ev := c2.NextEvent(t); !strings.Contains(string(ev.Data), `"run":2`) {
		t.Fatalf("after restart got %s", ev.Data)
	}
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func httpClient(t *testing.T, base, token string) *mcpetest.Client {
	t.Helper()
	return mcpetest.Connect(t, &mcp.StreamableClientTransport{
		Endpoint:   base + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token}},
	}, nil)
}

func TestHTTPEndToEnd(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte(`
auth:
  tokens:
    - principal: alice
      token: alice-token
    - principal: bob
      tokenEnv: TEST_BOB_TOKEN
  ingestTokens:
    - token: ingest-token
`), 0o600)
	t.Setenv("TEST_BOB_TOKEN", "bob-token")
	base, _, _ := startHTTPServer(t, "--config", cfg)

	// Without a valid token, /mcp answers 401.
	for _, token := range []string{"", "wrong"} {
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if code, _ := do(t, req, token); code != http.StatusUnauthorized {
			t.Errorf("token %q: status %d, want 401", token, code)
		}
	}
	// The initialize result carries capabilities.events over HTTP too.
	if caps := rawInitialize(t, base, "alice-token"); !strings.Contains(caps, `"events":{"maxSubscriptions":100,"deliveryChannels":["realtime","cron","scheduled"],"features":{"pause":true,"wildcards":true,"cronSchedule":true,"scheduledDelivery":true},"handlers":[]}`) {
		t.Errorf("initialize result over HTTP: %s", caps)
	}

	alice := httpClient(t, base, "alice-token")
	bob := httpClient(t, base, "bob-token")
	sub := alice.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"alert.*"}, "priority": []string{"critical"}}})
	bobSub := bob.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"*"}}})
	var list mcpe.ListResult
	bob.MustCall(t, "events_list", map[string]any{}, &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].ID != bobSub.ID {
		t.Fatalf("bob sees %+v", list.Subscriptions)
	}
	if msg := bob.CallError(t, "events_pause", map[string]any{"subscriptionId": sub.ID}); !strings.Contains(msg, "not found") {
		t.Fatalf("bob pausing alice's subscription: %q", msg)
	}

	// Publishing needs the ingest token.
	if code, body := post(t, base, "", `{"type": "alert.disk.firing", "data": {}}`); code != http.StatusUnauthorized {
		t.Fatalf("POST without token: %d %s", code, body)
	}
	code, _, stderr := cli(t, "publish", "--url", base, "--type", "alert.disk.firing")
	if code != 1 || !strings.Contains(stderr, "401") || !strings.Contains(stderr, "unauthorized") {
		t.Fatalf("publish without token: exit %d, %s", code, stderr)
	}
	code, out, stderr := cli(t, "publish", "--url", base, "--token", "ingest-token", "--type", "alert.disk.firing",
		"--priority", "critical", "--data", `{"host": "db1"}`, "--source-id", "fp-1")
	if code != 0 {
		t.Fatalf("publish: exit %d: %s", code, stderr)
	}
	id := strings.TrimSpace(out)
	for _, c := range []*mcpetest.Client{alice, bob} {
		if _, ev := c.NextEvent(t); ev.ID != id || string(ev.Data) != `{"host":"db1"}` {
			t.Fatalf("got %+v; want event %s", ev, id)
		}
	}
	// A redelivery is accepted once.
	code, out, stderr = cli(t, "publish", "--url", base, "--token", "ingest-token", "--type", "alert.disk.firing", "--source-id", "fp-1")
	if code != 0 || strings.TrimSpace(out) != id || !strings.Contains(stderr, "already accepted") {
		t.Fatalf("redelivery: exit %d, out %q, err %q", code, out, stderr)
	}
	// Bob's next event is the one after the redelivery: it was not routed.
	if code, _, stderr := cli(t, "publish", "--url", base, "--token", "ingest-token", "--type", "other.thing"); code != 0 {
		t.Fatalf("publish: exit %d: %s", code, stderr)
	}
	if _, ev := bob.NextEvent(t); ev.Type != "other.thing" {
		t.Fatalf("bob got %s; the redelivery must not be routed again", ev.Type)
	}
}

func rawInitialize(t *testing.T, base, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	_, body := do(t, req, token)
	return body
}

func TestHTTPSessionsWithoutTokensAreSeparatePrincipals(t *testing.T) {
	base, _, _ := startHTTPServer(t)
	a := httpClient(t, base, "")
	b := httpClient(t, base, "")
	a.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"x"}}})
	var list mcpe.ListResult
	b.MustCall(t, "events_list", map[string]any{}, &list)
	if len(list.Subscriptions) != 0 {
		t.Fatalf("second session sees %+v", list.Subscriptions)
	}
	post(t, base, "", `{"type": "x", "data": {}}`)
	if _, ev := a.NextEvent(t); ev.Type != "x" {
		t.Fatalf("got %s", ev.Type)
	}
}

func TestSignalStopsServer(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			base, cmd, done := startHTTPServer(t)
			c := httpClient(t, base, "") // an open event stream must not hold up shutdown
			c.MustCall(t, "events_list", map[string]any{}, nil)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("exit after %v: %v; want a clean exit", sig, err)
				}
			case <-time.After(mcpetest.Wait):
				t.Fatalf("server did not stop within the wait after %v", sig)
			}
		})
	}
}

// TestFlagsOverrideConfig gives the same settings in the config file and as
// flags: the flags win.
func TestFlagsOverrideConfig(t *testing.T) {
	dir := t.TempDir()
	fromConfig, fromFlag := filepath.Join(dir, "config.db"), filepath.Join(dir, "flag.db")
	cfg := filepath.Join(dir, "config.yaml")
	// With the config's values the server could not start (the address is
	// invalid) and would not log where it listens (level error).
	os.WriteFile(cfg, []byte("db: "+fromConfig+"\nhttp:\n  addr: 256.0.0.1:1\nlog:\n  level: error\n"), 0o600)
	c, base := startStdio(t, fromFlag, nil, "--config", cfg, "--log-level", "info")
	c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"x"}}})
	if code, body := post(t, base, "", `{"type": "x", "data": {}}`); code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", code, body)
	}
	c.NextEvent(t)
	if _, err := os.Stat(fromFlag); err != nil {
		t.Errorf("the --db database was not created: %v", err)
	}
	if _, err := os.Stat(fromConfig); err == nil {
		t.Errorf("the config's database was created although --db overrides it")
	}
}

func TestStdoutCarriesOnlyProtocol(t *testing.T) {
	cmd := exec.Command(binary, "--db", filepath.Join(t.TempDir(), "mcpe.db"), "--log-level", "debug")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"events_list","arguments":{}}}`+"\n")
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	for len(got) < 2 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stdout closed after %d lines", len(got))
			}
			got = append(got, l)
		case <-time.After(mcpetest.Wait):
			t.Fatalf("no response within the wait; stderr:\n%s", stderr.String())
		}
	}
	stdin.Close() // the host quits
	for l := range lines {
		got = append(got, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	if len(got) != 2 {
		t.Fatalf("stdout has %d lines, want the 2 responses:\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, l := range got {
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(l), &msg); err != nil || msg.JSONRPC != "2.0" || msg.ID == nil {
			t.Errorf("stdout line is not a JSON-RPC response: %s", l)
		}
	}
	if !strings.Contains(stderr.String(), "database opened") {
		t.Errorf("logs did not go to stderr: %s", stderr.String())
	}
}

func TestCommandLineErrors(t *testing.T) {
	badConfig := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(badConfig, []byte("auth:\n  tokens:\n    - token: x\n"), 0o600)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--nope"}, 2, "flag provided but not defined: -nope"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--config", badConfig}, 1, "auth.tokens[0].principal is required"},
		{[]string{"--config", "/does/not/exist.yaml"}, 1, "read config"},
		{[]string{"--log-level", "loud", "--db", ":memory:", "--http", "127.0.0.1:0"}, 2, `log level "loud": use debug, info, warn or error`},
		{[]string{"--http", "256.0.0.1:1", "--db", ":memory:"}, 1, "listen on 256.0.0.1:1"},
		{[]string{"publish", "--type", "a.b"}, 2, "--url is required"},
		{[]string{"publish", "--url", "ftp://x", "--type", "a.b"}, 2, `is not an http(s) URL`},
		{[]string{"publish", "--url", "http://127.0.0.1:1", "--type", "a..b"}, 2, `type: "a..b" has an empty segment`},
		{[]string{"publish", "--url", "http://127.0.0.1:1", "--type", "a.b", "--data", "[1]"}, 2, "data: must be a JSON object"},
		{[]string{"publish", "--url", "http://127.0.0.1:1", "--type", "a.b", "--priority", "urgent"}, 2, `"urgent" is not a priority`},
		{[]string{"publish", "--url", "http://127.0.0.1:1", "--type", "a.b", "--data", "@/does/not/exist"}, 2, "--data: open /does/not/exist"},
		{[]string{"publish", "--url", "http://127.0.0.1:1", "--type", "a.b"}, 1, "connection refused"},
		{[]string{"version"}, 0, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := cli(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}
}

// scenario runs the whole subscription life over a connected client, with
// events posted to base's /v1/events: a wildcard subscription, an event that
// does not match, pause and resume, a filter update, events_poll paging and
// expiry.
func scenario(t *testing.T, c *mcpetest.Client, base, ingestToken string) {
	publish := func(typ string, n int) string {
		t.Helper()
		code, body := post(t, base, ingestToken, fmt.Sprintf(`{"type": %q, "data": {"n": %d}}`, typ, n))
		if code != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", typ, code, body)
		}
		var res struct{ ID string }
		json.Unmarshal([]byte(body), &res)
		return res.ID
	}
	next := func(want string) mcpe.EventParams {
		t.Helper()
		p, ev := c.NextEvent(t)
		if ev.ID != want {
			t.Fatalf("got event %s (%s); want %s", ev.ID, ev.Type, want)
		}
		return p
	}
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"github.*"}}})
	ref := map[string]any{"subscriptionId": sub.ID}

	publish("slack.message", 1) // does not match
	want := publish("github.issue.opened", 2)
	if p := next(want); p.SubscriptionID != sub.ID {
		t.Fatalf("subscriptionId = %s, want %s", p.SubscriptionID, sub.ID)
	}

	c.MustCall(t, "events_pause", ref, nil)
	publish("github.push", 3) // skipped while paused
	c.MustCall(t, "events_resume", ref, nil)
	next(publish("github.push", 4))

	c.MustCall(t, "events_update", map[string]any{"subscriptionId": sub.ID, "filter": map[string]any{"eventTypes": []string{"ci.*"}}}, nil)
	publish("github.push", 5) // no longer matches
	last := publish("ci.failed", 6)
	next(last)

	var p1, p2 mcpe.PollResult
	c.MustCall(t, "events_poll", map[string]any{"limit": 2}, &p1)
	c.MustCall(t, "events_poll", map[string]any{"limit": 2}, &p2)
	if len(p1.Items) != 2 || !p1.HasMore || len(p2.Items) != 1 || p2.HasMore || !strings.Contains(string(p2.Items[0].Event), last) {
		t.Fatalf("poll pages: %+v then %+v; want the 3 delivered events, 2 then 1", p1, p2)
	}

	// Expiry in real time, kept short: the server's timer fires at expiresAt.
	expiring := c.Subscribe(t, map[string]any{
		"filter":    map[string]any{"eventTypes": []string{"never.sent"}},
		"expiresAt": time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano),
	})
	n := c.Next(t)
	var ep mcpe.ExpiredParams
	if err := json.Unmarshal(n.Params, &ep); err != nil || n.Method != mcpe.MethodSubscriptionExpired || ep.SubscriptionID != expiring.ID {
		t.Fatalf("got %v; want events/subscription_expired for %s", n, expiring.ID)
	}
	var list mcpe.ListResult
	c.MustCall(t, "events_list", map[string]any{"status": "expired"}, &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].ID != expiring.ID {
		t.Fatalf("expired subscriptions: %+v", list.Subscriptions)
	}
}

func TestScenarioOverStdio(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			c, base := startStdio(t, filepath.Join(t.TempDir(), "mcpe.db"), p.opts)
			scenario(t, c, base, "")
		})
	}
}

// protocols are the protocol versions the go-sdk client speaks. Over
// Streamable HTTP with sessions it negotiates 2025-11-25 only.
var protocols = []struct {
	name string
	opts *mcp.ClientSessionOptions
}{{"2026-07-28", nil}, {"2025-11-25", &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}}}

// TestTwoPrincipalsOnOneServer serves the stdio host (principal local) and
// an HTTP client with a bearer token (principal alice) from one process:
// neither sees, changes or receives what belongs to the other.
func TestTwoPrincipalsOnOneServer(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte("auth:\n  tokens:\n    - principal: alice\n      token: alice-token\n"), 0o600)
	local, base := startStdio(t, filepath.Join(t.TempDir(), "mcpe.db"), nil, "--config", cfg)
	alice := httpClient(t, base, "alice-token")
	checkIsolated(t, base, "", local, alice)
}

// checkIsolated checks that the principals of a and b cannot see, change or
// receive each other's subscriptions and events, with events posted to
// base's /v1/events.
func checkIsolated(t *testing.T, base, ingestToken string, a, b *mcpetest.Client) {
	t.Helper()
	subA := a.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"a.*"}}})
	subB := b.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"b.*"}}})
	publish := func(typ string) string {
		t.Helper()
		code, body := post(t, base, ingestToken, fmt.Sprintf(`{"type": %q, "data": {}}`, typ))
		if code != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", typ, code, body)
		}
		var res struct{ ID string }
		json.Unmarshal([]byte(body), &res)
		return res.ID
	}
	forA, forB := publish("a.one"), publish("b.one")
	for _, tc := range []struct {
		c           *mcpetest.Client
		sub, event  string
		foreign     string
		description string
	}{{a, subA.ID, forA, subB.ID, "first"}, {b, subB.ID, forB, subA.ID, "second"}} {
		params, ev := tc.c.NextEvent(t)
		if params.SubscriptionID != tc.sub || ev.ID != tc.event {
			t.Errorf("%s principal received %s for %s; want %s for %s", tc.description, ev.ID, params.SubscriptionID, tc.event, tc.sub)
		}
		var list mcpe.ListResult
		tc.c.MustCall(t, "events_list", map[string]any{}, &list)
		if len(list.Subscriptions) != 1 || list.Subscriptions[0].ID != tc.sub {
			t.Errorf("%s principal lists %+v", tc.description, list.Subscriptions)
		}
		var poll mcpe.PollResult
		tc.c.MustCall(t, "events_poll", map[string]any{}, &poll)
		if len(poll.Items) != 1 || !strings.Contains(string(poll.Items[0].Event), tc.event) {
			t.Errorf("%s principal's inbox: %+v", tc.description, poll.Items)
		}
		unknown := "0b6e3a57-1d2c-4f5e-8a9b-c0d1e2f3a4b5"
		for _, tool := range []string{"events_pause", "events_resume", "events_unsubscribe", "events_update"} {
			args := func(id string) map[string]any {
				m := map[string]any{"subscriptionId": id}
				if tool == "events_update" {
					m["filter"] = map[string]any{"eventTypes": []string{"*"}}
				}
				return m
			}
			foreign := strings.ReplaceAll(tc.c.CallError(t, tool, args(tc.foreign)), tc.foreign, "ID")
			missing := strings.ReplaceAll(tc.c.CallError(t, tool, args(unknown)), unknown, "ID")
			if foreign != missing || !strings.Contains(foreign, "not found") {
				t.Errorf("%s principal's %s: a foreign subscription says %q, an unknown one %q; want the same \"not found\"", tc.description, tool, foreign, missing)
			}
		}
	}
	// Nothing else arrived: each next event is the next one of its own.
	forA, forB = publish("a.two"), publish("b.two")
	if _, ev := a.NextEvent(t); ev.ID != forA {
		t.Errorf("first principal then received %s (%s); want %s", ev.ID, ev.Type, forA)
	}
	if _, ev := b.NextEvent(t); ev.ID != forB {
		t.Errorf("second principal then received %s (%s); want %s", ev.ID, ev.Type, forB)
	}
}

// TestHTTPPrincipalsAreIsolated checks two principals over Streamable HTTP:
// two bearer tokens, and two sessions of a server without tokens.
func TestHTTPPrincipalsAreIsolated(t *testing.T) {
	t.Run("tokens", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "config.yaml")
		os.WriteFile(cfg, []byte("auth:\n  tokens:\n    - principal: alice\n      token: alice-token\n    - principal: bob\n      token: bob-token\n"), 0o600)
		base, _, _ := startHTTPServer(t, "--config", cfg)
		checkIsolated(t, base, "", httpClient(t, base, "alice-token"), httpClient(t, base, "bob-token"))
	})
	t.Run("sessions", func(t *testing.T) {
		base, _, _ := startHTTPServer(t)
		checkIsolated(t, base, "", httpClient(t, base, ""), httpClient(t, base, ""))
	})
}

// TestHTTPRestartKeepsSubscriptionsAndInbox stops an HTTP server with bearer
// tokens and starts it again on the same database: the token's principal
// finds its subscriptions, their counts and its inbox.
func TestHTTPRestartKeepsSubscriptionsAndInbox(t *testing.T) {
	dir := t.TempDir()
	db, cfg := filepath.Join(dir, "mcpe.db"), filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte("auth:\n  tokens:\n    - principal: alice\n      token: alice-token\n"), 0o600)
	base, cmd, done := startHTTPServer(t, "--db", db, "--config", cfg)
	c := httpClient(t, base, "alice-token")
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"ci.*"}}})
	post(t, base, "", `{"type": "ci.failed", "data": {"run": 1}}`)
	c.NextEvent(t)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(mcpetest.Wait):
		t.Fatal("the server did not stop after SIGTERM")
	}

	base2, _, _ := startHTTPServer(t, "--db", db, "--config", cfg)
	c2 := httpClient(t, base2, "alice-token")
	var list mcpe.ListResult
	c2.MustCall(t, "events_list", map[string]any{}, &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].ID != sub.ID || list.Subscriptions[0].DeliveredCount != 1 {
		t.Fatalf("after restart: %+v", list.Subscriptions)
	}
	var poll mcpe.PollResult
	c2.MustCall(t, "events_poll", map[string]any{"cursor": "0"}, &poll)
	if len(poll.Items) != 1 || !strings.Contains(string(poll.Items[0].Event), `"run":1`) {
		t.Fatalf("inbox after restart: %+v", poll.Items)
	}
	post(t, base2, "", `{"type": "ci.failed", "data": {"run": 2}}`)
	if _, ev := c2.NextEvent(t); !strings.Contains(string(ev.Data), `"run":2`) {
		t.Fatalf("after restart got %s", ev.Data)
	}
}

// TestInMemoryDatabase serves with --db :memory:: everything works, and no
// database file is written, not even in the default place.
func TestInMemoryDatabase(t *testing.T) {
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("HOME", data)
	c, base := startStdio(t, ":memory:", nil)
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"mem.*"}}})
	code, body := post(t, base, "", `{"type": "mem.event", "data": {"n": 1}}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", code, body)
	}
	if params, ev := c.NextEvent(t); params.SubscriptionID != sub.ID || ev.Type != "mem.event" {
		t.Fatalf("got %s for %s", ev.Type, params.SubscriptionID)
	}
	var poll mcpe.PollResult
	c.MustCall(t, "events_poll", map[string]any{}, &poll)
	if len(poll.Items) != 1 {
		t.Fatalf("events_poll = %+v", poll.Items)
	}
	var files []string
	filepath.WalkDir(data, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	if len(files) != 0 {
		t.Errorf("--db :memory: wrote %v", files)
	}
	if _, err := os.Stat(":memory:"); err == nil {
		t.Errorf("--db :memory: created a file named :memory:")
	}
}

func TestScenarioOverStreamableHTTP(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte("auth:\n  tokens:\n    - principal: alice\n      token: alice-token\n"), 0o600)
	base, _, _ := startHTTPServer(t, "--config", cfg)
	scenario(t, httpClient(t, base, "alice-token"), base, "")
}

// fastCronConfig lets "@every 1s" schedules through, so that digests fire
// within a test's patience.
func fastCronConfig(t *testing.T) string {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("subscriptions:\n  minEvery: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// nextBatch waits for an events/batch and returns its params.
func nextBatch(t *testing.T, c *mcpetest.Client) mcpe.BatchParams {
	t.Helper()
	n := c.Next(t)
	var p mcpe.BatchParams
	if err := json.Unmarshal(n.Params, &p); err != nil || n.Method != mcpe.MethodBatch {
		t.Fatalf("got %v (%v); want events/batch", n, err)
	}
	return p
}

func batchData(t *testing.T, p mcpe.BatchParams) []string {
	t.Helper()
	var out []string
	for _, raw := range p.Events {
		var ev mcpe.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, string(ev.Data))
	}
	return out
}

func TestCronDigestOverStdio(t *testing.T) {
	c, base := startStdio(t, filepath.Join(t.TempDir(), "mcpe.db"), nil, "--config", fastCronConfig(t))
	sub := c.Subscribe(t, map[string]any{
		"filter":   map[string]any{"eventTypes": []string{"build.*"}},
		"delivery": map[string]any{"channels": []string{"cron"}, "cronSchedule": map[string]any{"expression": "@every 1s"}},
	})
	if sub.NextDelivery == nil {
		t.Fatalf("no nextDelivery in %+v", sub)
	}
	post(t, base, "", `{"type": "build.failed", "data": {"n": 1}}`)
	post(t, base, "", `{"type": "build.fixed", "data": {"n": 2}}`)
	p := nextBatch(t, c)
	if p.SubscriptionID != sub.ID || p.Remaining != 0 {
		t.Errorf("batch params: %+v", p)
	}
	if diff := cmp.Diff([]string{`{"n":1}`, `{"n":2}`}, batchData(t, p)); diff != "" {
		t.Errorf("digest mismatch (-want +got):\n%s", diff)
	}
}

// TestBufferedEventsSurviveSIGKILL buffers events for a digest (a cron
// schedule, and a one-time delivery), kills the server with SIGKILL, starts
// it again, and expects the next digest to carry them: on time if the
// restart beats the fire time, at start-up if the fire fell while it was
// down.
func TestBufferedEventsSurviveSIGKILL(t *testing.T) {
	// margin is how long after subscribing the digest is due; the kill must
	// come before.
	const margin = 3 * time.Second
	for _, tc := range []struct {
		name     string
		delivery func() map[string]any
		expires  bool
	}{
		{"cron", func() map[string]any {
			return map[string]any{"channels": []string{"cron"}, "cronSchedule": map[string]any{"expression": fmt.Sprintf("@every %v", margin)}}
		}, false},
		{"scheduled", func() map[string]any {
			return map[string]any{"channels": []string{"scheduled"}, "scheduledDelivery": map[string]any{"deliverAt": time.Now().Add(margin).UTC().Format(time.RFC3339Nano)}}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "mcpe.db")
			cfg := fastCronConfig(t)
			c, base, cmd := startStdioProcess(t, db, nil, "--config", cfg)
			sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"deploy.*"}}, "delivery": tc.delivery()})
			for i := 1; i <= 3; i++ {
				if code, body := post(t, base, "", fmt.Sprintf(`{"type": "deploy.step", "data": {"n": %d}}`, i)); code != http.StatusAccepted {
					t.Fatalf("POST: %d %s", code, body)
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if got := c.Pending(); len(got) != 0 {
				t.Fatalf("the digest went out before the kill (%v): the machine took longer than %v, so this run tests nothing", got, margin)
			}

			c2, _ := startStdio(t, db, nil, "--config", cfg)
			p := nextBatch(t, c2)
			if p.SubscriptionID != sub.ID {
				t.Errorf("batch for %s, want %s", p.SubscriptionID, sub.ID)
			}
			if diff := cmp.Diff([]string{`{"n":1}`, `{"n":2}`, `{"n":3}`}, batchData(t, p)); diff != "" {
				t.Errorf("digest after SIGKILL mismatch (-want +got):\n%s", diff)
			}
			if tc.expires {
				if n := c2.Next(t); n.Method != mcpe.MethodSubscriptionExpired {
					t.Errorf("after the one-time delivery got %v; want events/subscription_expired (autoExpire)", n)
				}
			}
		})
	}
}

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		gogc string
		want int
	}{{"", mcpserver.GCPercent}, {"100", 100}, {"off", 100}} {
		debug.SetGCPercent(100)
		tuneGC(func(name string) string {
			if name == "GOGC" {
				return tc.gogc
			}
			return ""
		})
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("GOGC=%q: GC percent %d, want %d", tc.gogc, got, tc.want)
		}
	}
}

func TestTuneGCMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, tc := range []struct {
		gomemlimit string
		want       int64
	}{{"", mcpserver.MemoryLimit}, {"2GiB", math.MaxInt64}} {
		debug.SetMemoryLimit(math.MaxInt64)
		tuneGC(func(name string) string {
			if name == "GOMEMLIMIT" {
				return tc.gomemlimit
			}
			return ""
		})
		if got := debug.SetMemoryLimit(-1); got != tc.want {
			t.Errorf("GOMEMLIMIT=%q: memory limit %d, want %d (left to the runtime)", tc.gomemlimit, got, tc.want)
		}
	}
}

// TestRemovedDatabaseRefusesEvents deletes the database files of a running
// server: it must stop answering 202 for what it can no longer keep, and
// say so on /healthz.
func TestRemovedDatabaseRefusesEvents(t *testing.T) {
	db := filepath.Join(t.TempDir(), "mcpe.db")
	base, _, _ := startHTTPServer(t, "--db", db)
	if code, body := post(t, base, "", `{"type": "x"}`); code != http.StatusAccepted {
		t.Fatalf("before: %d %s", code, body)
	}
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		os.Remove(f)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, base+"/healthz", nil)
		code, body := do(t, req, "")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "was removed while the server ran") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz still answers %d %s after the database was removed", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, body := post(t, base, "", `{"type": "x"}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"unavailable"`) {
		t.Errorf("an event after the removal: %d %s; want 503 unavailable", code, body)
	}
}
