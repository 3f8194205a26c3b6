package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// TestWorkstationTwoServersOneDatabase is two hosts on one machine, each
// starting "mcpe-server --stdio --http ADDR" on the default database: the
// second finds the port taken by the first, says so and serves its host;
// what is subscribed through the second hears events posted to the first,
// and both hosts' sessions of the local principal get them, once each, in
// order.
func TestWorkstationTwoServersOneDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "mcpe.db")
	first, base := startStdio(t, db, nil)
	addr := strings.TrimPrefix(base, "http://")

	cmd := exec.Command(binary, "--stdio", "--http", addr, "--db", db)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	logs := watchLog(t, pr)
	t.Cleanup(func() { pw.Close() })
	second := mcpetest.Connect(t, &mcp.CommandTransport{Command: cmd}, nil)
	second.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"deploy.*"}}})

	// The first routes by the subscription once it has followed the
	// database: post until an event gets through, a bounded number of times.
	got := false
	for i := 0; i < 200 && !got; i++ {
		if code, body := post(t, base, "", fmt.Sprintf(`{"type":"deploy.probe","data":{"i":%d}}`, i)); code != 202 {
			t.Fatalf("POST = %d %s", code, body)
		}
		deadline := time.Now().Add(50 * time.Millisecond)
		for time.Now().Before(deadline) && !got {
			for _, n := range second.Pending() {
				got = got || n.Method == mcpe.MethodEvent
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if !got {
		t.Fatalf("no event posted to the first server reached the second's session; second's log:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "HTTP port taken by another mcpe-server on the same database") {
		t.Errorf("the second server did not say why it serves stdio only; log:\n%s", logs)
	}
	// From now on, every event reaches both hosts, once, in order.
	first.Pending()
	second.Pending()
	for i := range 5 {
		if code, body := post(t, base, "", fmt.Sprintf(`{"type":"deploy.done","data":{"n":%d}}`, i)); code != 202 {
			t.Fatalf("POST = %d %s", code, body)
		}
	}
	for name, c := range map[string]*mcpetest.Client{"first": first, "second": second} {
		for i := range 5 {
			_, ev := c.NextEvent(t)
			var data struct{ N int }
			if err := json.Unmarshal(ev.Data, &data); err != nil || ev.Type != "deploy.done" || data.N != i {
				t.Fatalf("%s host's event %d = %s %s; want deploy.done n=%d", name, i, ev.Type, ev.Data, i)
			}
		}
	}
}

// TestPortTakenByAnotherDatabase checks that a second server whose port is
// held by a server on another database stops, naming both.
func TestPortTakenByAnotherDatabase(t *testing.T) {
	dir := t.TempDir()
	_, base := startStdio(t, filepath.Join(dir, "first.db"), nil)
	other := filepath.Join(dir, "second.db")
	code, _, stderr := cli(t, "--stdio", "--http", strings.TrimPrefix(base, "http://"), "--db", other)
	if code == 0 {
		t.Fatalf("the second server ran on a port held by a server of another database; stderr:\n%s", stderr)
	}
	for _, want := range []string{"address already in use", filepath.Join(dir, "first.db"), other, "another --http address"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

// TestPortTakenHTTPOnly: with --http alone, a port another process holds
// stops the server with an error that names the process and says what to
// do, as with --stdio --http.
func TestPortTakenHTTPOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, args := range [][]string{{"--http", ln.Addr().String()}, {"--stdio", "--http", ln.Addr().String()}} {
		code, _, stderr := cli(t, append(args, "--db", filepath.Join(t.TempDir(), "mcpe.db"))...)
		if code != 1 {
			t.Fatalf("%v on a taken port: exit %d; want 1\n%s", args, code, stderr)
		}
		for _, want := range []string{"address already in use, by " + thisProcess(), "stop it, or give --http"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: stderr does not say %q:\n%s", args, want, stderr)
			}
		}
	}
}
