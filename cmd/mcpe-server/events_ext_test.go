package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
)

// rawStdio is the binary serving stdio, driven with raw JSON-RPC lines:
// the go-sdk client drops the notifications/events/* of SEP-3415.
type rawStdio struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  chan map[string]any
	base string
	// exited is closed once the server has exited.
	exited chan struct{}
}

func startRawStdio(t *testing.T, db string, args ...string) *rawStdio {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"--stdio", "--http", "127.0.0.1:0", "--db", db}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := watchLog(t, stderr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rawStdio{cmd: cmd, in: in, out: make(chan map[string]any, 1024), exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				r.out <- m
			}
		}
		close(r.out)
	}()
	go func() { cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		<-r.exited
	})
	r.base = "http://" + logs.waitAddr(t)
	r.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if res := r.next(t, func(m map[string]any) bool { return m["id"] != nil }); res["result"] == nil {
		t.Fatalf("initialize: %v", res)
	}
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawStdio) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// next returns the next message that keep accepts, skipping the others.
func (r *rawStdio) next(t *testing.T, keep func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.After(mcpetest.Wait)
	for {
		select {
		case m, ok := <-r.out:
			if !ok {
				t.Fatal("the server closed its output")
			}
			if keep(m) {
				return m
			}
		case <-deadline:
			t.Fatalf("no matching message within %v", mcpetest.Wait)
		}
	}
}

// streamNote is a notification of the push stream.
func streamNote(m map[string]any) bool {
	method, _ := m["method"].(string)
	return method == "notifications/events/event" || method == "notifications/events/heartbeat" || method == "notifications/events/active"
}

func postN(t *testing.T, base string, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if code, body := post(t, base, "", fmt.Sprintf(`{"type":"e2e.step","data":{"n":%d}}`, i)); code != http.StatusAccepted {
			t.Fatalf("POST: %d %s", code, body)
		}
	}
}

// stepOf returns the n of an e2e.step event notification.
func stepOf(t *testing.T, m map[string]any) int {
	params := m["params"].(map[string]any)
	data := params["data"].(map[string]any)["data"].(map[string]any)
	return int(data["n"].(float64))
}

// TestStreamResumesAfterSIGKILL kills the server with SIGKILL while a push
// stream is open and events are arriving, starts it again on the same
// database, and resumes the stream from the last heartbeat's cursor: the
// events received up to that heartbeat and those received after resuming
// are every event posted, each once, in order.
func TestStreamResumesAfterSIGKILL(t *testing.T) {
	db := filepath.Join(t.TempDir(), "mcpe.db")
	cfg := writeConfig(t, "subscriptions:\n  heartbeatInterval: 50ms\n")
	r := startRawStdio(t, db, "--config", cfg)
	const open = `{"jsonrpc":"2.0","id":%d,"method":"events/stream","params":{"name":"mcpe.filter","arguments":{"eventTypes":["e2e.*"]},"cursor":%s}}`
	r.send(t, fmt.Sprintf(open, 1, "null"))
	if m := r.next(t, streamNote); m["method"] != "notifications/events/active" {
		t.Fatalf("first notification %v; want notifications/events/active", m)
	}
	postN(t, r.base, 1, 3)
	var kept []int // received up to the last heartbeat
	var since []int
	var cursor string
	for len(kept) < 3 {
		m := r.next(t, streamNote)
		params := m["params"].(map[string]any)
		switch m["method"] {
		case "notifications/events/event":
			since = append(since, stepOf(t, m))
		case "notifications/events/heartbeat":
			cursor = params["cursor"].(string)
			kept, since = append(kept, since...), nil
		}
	}
	postN(t, r.base, 4, 6)
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}

	r2 := startRawStdio(t, db, "--config", cfg)
	r2.send(t, fmt.Sprintf(open, 2, fmt.Sprintf("%q", cursor)))
	m := r2.next(t, streamNote)
	if m["method"] != "notifications/events/active" || m["params"].(map[string]any)["truncated"] != false {
		t.Fatalf("first notification after resuming %v; want notifications/events/active, not truncated", m)
	}
	postN(t, r2.base, 7, 8)
	var after []int
	for {
		m := r2.next(t, streamNote)
		if m["method"] == "notifications/events/event" {
			after = append(after, stepOf(t, m))
			continue
		}
		if m["method"] == "notifications/events/heartbeat" && slices.Contains(after, 8) {
			break
		}
	}
	got := append(kept, after...)
	if diff := cmp.Diff([]int{1, 2, 3, 4, 5, 6, 7, 8}, got); diff != "" {
		t.Errorf("events before the last heartbeat and after resuming (-want +got):\n%s", diff)
	}
}

// TestStreamUnreadableCursorIsTruncated resumes from a cursor the server
// cannot read: the stream opens with truncated and goes on.
func TestStreamUnreadableCursorIsTruncated(t *testing.T) {
	r := startRawStdio(t, filepath.Join(t.TempDir(), "mcpe.db"))
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"events/stream","params":{"name":"mcpe.filter","arguments":{"eventTypes":["e2e.*"]},"cursor":"garbage"}}`)
	m := r.next(t, streamNote)
	if m["method"] != "notifications/events/active" || m["params"].(map[string]any)["truncated"] != true {
		t.Fatalf("got %v; want notifications/events/active with truncated: true", m)
	}
	postN(t, r.base, 1, 1)
	if m := r.next(t, streamNote); m["method"] != "notifications/events/event" || stepOf(t, m) != 1 {
		t.Fatalf("got %v; want the event posted after", m)
	}
}

// TestShutdownWithAnOpenStream stops a server with SIGTERM while an
// events/stream is open on Streamable HTTP: the stream ends and the server
// exits (it used to wait on the stream for ever).
func TestShutdownWithAnOpenStream(t *testing.T) {
	base, cmd, done := startHTTPServer(t)
	post := func(session, body string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	init := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	io.Copy(io.Discard, init.Body)
	init.Body.Close()
	session := init.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatal("no Mcp-Session-Id")
	}
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	stream := post(session, `{"jsonrpc":"2.0","id":1,"method":"events/stream","params":{"name":"mcpe.filter","arguments":{"eventTypes":["deploy.*"]}}}`)
	defer stream.Body.Close()
	active := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "notifications/events/active") {
				close(active)
				io.Copy(io.Discard, stream.Body)
				return
			}
		}
	}()
	select {
	case <-active:
	case <-time.After(mcpetest.Wait):
		t.Fatal("the stream did not start")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(mcpetest.Wait):
		t.Fatal("the server did not exit after SIGTERM while a stream was open")
	}
}
