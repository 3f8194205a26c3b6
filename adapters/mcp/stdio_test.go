package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
)

// runStdioUpstream is the test binary re-executed as a stdio MCP server: once
// the client has initialized, it sends one events/event carrying its
// process ID, then serves until stdin closes.
func runStdioUpstream() {
	server := mcp.NewServer(&mcp.Implementation{Name: "stdio-upstream", Version: "0"}, &mcp.ServerOptions{
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			sink, err := mcpserver.SessionSink(req.Session)
			if err != nil {
				fmt.Fprintln(os.Stderr, "sink:", err)
				return
			}
			params := fmt.Sprintf(`{"subscriptionId":"s","event":{"id":"e-stdio","type":"child.started","data":{"pid":%d,"env":%q},"metadata":{"priority":"low"}}}`,
				os.Getpid(), os.Getenv("EXTRA"))
			if err := sink.Notify(context.Background(), "events/event", json.RawMessage(params)); err != nil {
				fmt.Fprintln(os.Stderr, "notify:", err)
			}
		},
	})
	fmt.Fprintln(os.Stderr, "stdio upstream ready")
	ss, err := server.Connect(context.Background(), &mcp.StdioTransport{}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	ss.Wait()
}

func TestStdioUpstream(t *testing.T) {
	rec := newRecorder()
	a, err := New(Options{
		Upstreams: []Upstream{{
			Name:    "child",
			Command: []string{os.Args[0], "-test.run=^$"},
			// GORACE: a race-enabled child would otherwise wait 1s before it exits.
			Env: map[string]string{childEnv: childOK, "EXTRA": "from-env", "GORACE": "atexit_sleep_ms=0"},
		}},
		Publisher: rec,
		Clock:     clocktest.NewFake(t0),
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	start(t, a)

	ev := rec.wait(t, "mcp.child.child.started", 1)[0]
	// A command is asked for 2025-11-25 unless told otherwise.
	if v := decode(t, rec.wait(t, "mcp.child.connected", 1)[0])["protocolVersion"]; v != "2025-11-25" {
		t.Errorf("protocolVersion %v; want 2025-11-25", v)
	}
	if st := state(t, a); st.Status != StatusConnected {
		t.Errorf("state = %+v; want connected", st)
	}
	data := decode(t, ev)
	if data["env"] != "from-env" {
		t.Errorf("data.env = %v; want the value of Upstream.Env, \"from-env\"", data["env"])
	}
	if ev.Metadata.SourceEventID != "child:e-stdio" || ev.Metadata.Priority != "low" {
		t.Errorf("metadata = %+v; want sourceEventId child:e-stdio, priority low", ev.Metadata)
	}
	rec.noRejects(t)

	// Stop ends the child.
	begin := time.Now()
	a.Stop()
	t.Logf("Stop took %v", time.Since(begin))
	pid := int(data["pid"].(float64))
	p, err := os.FindProcess(pid)
	if err == nil {
		err = p.Signal(syscall.Signal(0))
	}
	if err == nil {
		t.Errorf("the child (pid %d) still runs after Stop", pid)
	} else if !errors.Is(err, os.ErrProcessDone) && !errors.Is(err, syscall.ESRCH) {
		t.Logf("signal 0 to the child after Stop: %v", err)
	}
}

func TestStdioUpstreamFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command []string
		env     map[string]string
		want    string
	}{
		{
			name:    "exits with a message",
			command: []string{os.Args[0], "-test.run=^$"},
			env:     map[string]string{childEnv: childFail},
			want:    `last stderr line: "fatal: missing token"`,
		},
		{
			name:    "no such program",
			command: []string{"/nonexistent/mcp-server"},
			want:    "/nonexistent/mcp-server",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := clocktest.NewFake(t0)
			rec := newRecorder()
			a, err := New(Options{
				Upstreams: []Upstream{{Name: "bad", Command: tc.command, Env: tc.env}},
				Publisher: rec,
				Clock:     fake,
				Logger:    testLogger(t),
			})
			if err != nil {
				t.Fatal(err)
			}
			start(t, a)
			eventually(t, "the upstream to be retrying", func() bool { return state(t, a).Status == StatusRetrying })
			st := state(t, a)
			if !strings.Contains(st.LastError, tc.want) {
				t.Errorf("lastError = %q; want it to contain %q", st.LastError, tc.want)
			}
			if st.NextAttempt == "" {
				t.Errorf("state %+v has no nextAttempt", st)
			}
			// It never connected: no disconnected event.
			if got := rec.ofType("mcp.bad.disconnected"); len(got) != 0 {
				t.Errorf("published %d disconnected events for an upstream that never connected", len(got))
			}
			// Stop interrupts the backoff wait (the fake clock never moves).
			a.Stop()
		})
	}
}
