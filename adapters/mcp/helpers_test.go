package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// waitLimit bounds every wait in these tests.
const waitLimit = 10 * time.Second

// t0 is the fake clock's start.
var t0 = time.Date(2026, 1, 15, 10, 30, 0, 0, time.UTC)

// recorder is a Publisher that keeps what it is given. Like the real one
// it refuses invalid events; those are kept apart.
type recorder struct {
	mu       sync.Mutex
	events   []mcpe.Event
	rejected []error
	changed  chan struct{} // closed and replaced on every Publish
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) Publish(_ context.Context, ev mcpe.Event) (subscriptions.PublishResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() { close(r.changed); r.changed = make(chan struct{}) }()
	check := ev
	if err := subscriptions.NormalizeEvent(&check, t0); err != nil {
		r.rejected = append(r.rejected, fmt.Errorf("%s: %w", ev.Type, err))
		return subscriptions.PublishResult{}, err
	}
	r.events = append(r.events, ev)
	return subscriptions.PublishResult{EventID: fmt.Sprint(len(r.events))}, nil
}

// ofType returns the events of type typ published so far.
func (r *recorder) ofType(typ string) []mcpe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []mcpe.Event
	for _, ev := range r.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// wait waits until n events of type typ have been published and returns
// them all.
func (r *recorder) wait(t *testing.T, typ string, n int) []mcpe.Event {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		r.mu.Lock()
		ch := r.changed
		r.mu.Unlock()
		if got := r.ofType(typ); len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waited %v for %d event(s) of type %s; published: %s", waitLimit, n, typ, r.types())
		}
	}
}

// types lists the types published so far, for failure messages.
func (r *recorder) types() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ts []string
	for _, ev := range r.events {
		ts = append(ts, ev.Type)
	}
	return "[" + strings.Join(ts, " ") + "]"
}

// noRejects fails the test if an invalid event was published.
func (r *recorder) noRejects(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, err := range r.rejected {
		t.Errorf("the adapter published an invalid event: %v", err)
	}
}

// testLogger returns a logger whose output is shown when the test fails.
func testLogger(t *testing.T) *slog.Logger {
	var buf syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// eventually waits until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", waitLimit, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// state returns the adapter's only upstream state.
func state(t *testing.T, a *Adapter) mcpe.SourceState {
	t.Helper()
	states := a.States()
	if len(states) != 1 {
		t.Fatalf("States() = %+v; want one upstream", states)
	}
	return states[0]
}

// eventParams returns the params of an events/event notification.
func eventParams(t *testing.T, event string) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(mcpe.EventParams{SubscriptionID: "sub-1", Cursor: "1", Event: json.RawMessage(event)})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// notifyUntilDelivered writes one notification to the adapter's session on
// up, retrying while none can take it yet: over Streamable HTTP the client
// opens its standalone event stream shortly after it connects, and a
// stateless upstream has a session per request in progress, some of which
// end while it is tried, so every attempt looks at the sessions there are
// then.
func notifyUntilDelivered(t *testing.T, up *httpUpstream, method string, params json.RawMessage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for {
		err := errors.New("the upstream has no session")
		for ss := range up.server.Sessions() {
			var sink *mcpserver.Sink
			if sink, err = mcpserver.SessionSink(ss); err != nil {
				t.Fatalf("SessionSink: %v", err)
			}
			if err = sink.Notify(ctx, method, params); err == nil {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("Sink.Notify(%s) kept failing: %v", method, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// start starts a and stops it when the test ends.
func start(t *testing.T, a *Adapter) {
	t.Helper()
	if err := a.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(a.Stop)
}

// decode decodes an event's data into a map.
func decode(t *testing.T, ev mcpe.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		t.Fatalf("%s data %s: %v", ev.Type, ev.Data, err)
	}
	return m
}

// The child process modes of TestMain.
const (
	childEnv        = "MCP_ADAPTER_TEST_UPSTREAM"
	childOK         = "stdio"
	childFail       = "fail"
	childControlled = "controlled"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case childOK:
		runStdioUpstream()
		return
	case childControlled:
		runControlledUpstream()
		return
	case childFail:
		fmt.Fprintln(os.Stderr, "starting")
		fmt.Fprintln(os.Stderr, "fatal: missing token")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// startAdapter starts an adapter of upstreams that publishes to pub, on
// fake, retrying after a second at first and a minute at most; it stops
// when the test ends.
func startAdapter(t *testing.T, pub subscriptions.Publisher, fake *clocktest.Fake, upstreams ...Upstream) *Adapter {
	t.Helper()
	a := newAdapter(t, pub, fake, upstreams...)
	start(t, a)
	return a
}

// newAdapter is startAdapter's adapter, not started.
func newAdapter(t *testing.T, pub subscriptions.Publisher, fake *clocktest.Fake, upstreams ...Upstream) *Adapter {
	t.Helper()
	a, err := New(Options{Upstreams: upstreams, Publisher: pub, Clock: fake, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	a.backoff.max = time.Minute
	return a
}
