package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpe-server/mcpe-server/client"
)

// sepFilter is the subscription these tests poll and stream: every event
// whose type starts with "sep.".
var sepFilter = json.RawMessage(`{"eventTypes":["sep.*"]}`)

// occurrences collects the occurrences a loop hands over.
type occurrences struct {
	ch chan client.Occurrence
}

func newOccurrences() *occurrences { return &occurrences{ch: make(chan client.Occurrence, 1000)} }

func (o *occurrences) handle(_ context.Context, occ client.Occurrence) error {
	o.ch <- occ
	return nil
}

// expect checks that the next occurrences are the events ids, in order.
func (o *occurrences) expect(t *testing.T, ids ...string) {
	t.Helper()
	var got []string
	for range ids {
		select {
		case occ := <-o.ch:
			got = append(got, occ.EventID)
		case <-time.After(wait):
			t.Fatalf("got %v, then nothing within %v; want %v", got, wait, ids)
		}
	}
	if diff := cmp.Diff(ids, got); diff != "" {
		t.Fatalf("occurrences mismatch (-want +got):\n%s", diff)
	}
}

// testLogger logs to t.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// publishN publishes n events of type sep.test and returns their IDs.
func publishN(t *testing.T, l link, n int, prefix string) []string {
	t.Helper()
	var ids []string
	for i := range n {
		ids = append(ids, l.publish(t, "sep.test", fmt.Sprintf(`{"n": %q}`, fmt.Sprint(prefix, i))))
	}
	return ids
}

func TestListEventTypes(t *testing.T) {
	for _, l := range []func(*testing.T) link{
		func(t *testing.T) link { return memoryLink(t, "2026-07-28") },
		func(t *testing.T) link { return memoryLink(t, "2025-11-25") },
		func(t *testing.T) link { return httpLink(t, "") },
	} {
		l := l(t)
		t.Run(l.name+"/"+l.negotiated, func(t *testing.T) {
			c := connect(t, l, nil, nil)
			if !c.SupportsEventsExtension() {
				t.Errorf("SupportsEventsExtension() = false, want true")
			}
			types, err := c.ListEventTypes(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(types) == 0 || types[0].Name != "mcpe.filter" {
				t.Fatalf("ListEventTypes: first type is not mcpe.filter: %+v", types)
			}
			for _, ty := range types {
				if !slices.Contains(ty.Delivery, "poll") || !slices.Contains(ty.Delivery, "push") || len(ty.InputSchema) == 0 {
					t.Errorf("type %s: delivery %v, inputSchema %s; want poll and push and a schema", ty.Name, ty.Delivery, ty.InputSchema)
				}
			}
		})
	}
}

func TestPollEventsValidates(t *testing.T) {
	l := memoryLink(t, "")
	c := connect(t, l, nil, nil)
	neg, zero := int64(-1), 0
	for _, tc := range []struct {
		name string
		req  client.EventsPollRequest
		want string
	}{
		{"no name", client.EventsPollRequest{}, "Name is required"},
		{"arguments not an object", client.EventsPollRequest{Name: "mcpe.filter", Arguments: json.RawMessage(`[1]`)}, "not a JSON object"},
		{"negative maxAgeMs", client.EventsPollRequest{Name: "mcpe.filter", MaxAgeMs: &neg}, "MaxAgeMs is -1"},
		{"zero maxEvents", client.EventsPollRequest{Name: "mcpe.filter", MaxEvents: &zero}, "MaxEvents is 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.PollEvents(ctxT(t), tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("PollEvents error = %v, want one that says %q", err, tc.want)
			}
		})
	}
	// The server's refusals come back as JSON-RPC errors, and a loop stops
	// on them at once.
	_, err := c.RunPoll(ctxT(t), client.PollLoop{Request: client.EventsPollRequest{Name: "no.such.type"}, OnEvent: newOccurrences().handle})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != -32023 {
		t.Errorf("RunPoll of an unknown type: error %v, want JSON-RPC -32023 (NotFound)", err)
	}
	_, err = c.RunStream(ctxT(t), client.StreamLoop{Request: client.EventsStreamRequest{Name: "no.such.type"}, OnEvent: newOccurrences().handle})
	if !errors.As(err, &je) || je.Code != -32023 {
		t.Errorf("RunStream of an unknown type: error %v, want JSON-RPC -32023 (NotFound)", err)
	}
	if _, err := c.RunStream(ctxT(t), client.StreamLoop{Request: client.EventsStreamRequest{Name: "mcpe.filter"}}); err == nil || !strings.Contains(err.Error(), "OnEvent is required") {
		t.Errorf("RunStream without OnEvent: error %v", err)
	}
}

func TestRunPoll(t *testing.T) {
	for _, mk := range []func(*testing.T) link{
		func(t *testing.T) link { return memoryLink(t, "") },
		func(t *testing.T) link { return httpLink(t, "") },
	} {
		l := mk(t)
		t.Run(l.name, func(t *testing.T) {
			c := connect(t, l, nil, nil)
			ctx := ctxT(t)
			// A null cursor subscribes and gives the position.
			first, err := c.PollEvents(ctx, client.EventsPollRequest{Name: "mcpe.filter", Arguments: sepFilter})
			if err != nil {
				t.Fatal(err)
			}
			if len(first.Events) != 0 || first.Cursor == "" {
				t.Fatalf("first poll = %+v, want no events and a cursor", first)
			}
			ids := publishN(t, l, 5, "a")
			got := newOccurrences()
			var mu sync.Mutex
			var cursors []string
			max := 2
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := c.RunPoll(ctx, client.PollLoop{
					Request: client.EventsPollRequest{Name: "mcpe.filter", Arguments: sepFilter, Cursor: &first.Cursor, MaxEvents: &max},
					OnEvent: got.handle,
					OnCursor: func(_ context.Context, cursor string, truncated bool) error {
						mu.Lock()
						defer mu.Unlock()
						if truncated {
							return fmt.Errorf("truncated at %s", cursor)
						}
						cursors = append(cursors, cursor)
						return nil
					},
					MaxInterval: 20 * time.Millisecond,
				})
				done <- err
			}()
			got.expect(t, ids...)
			more := publishN(t, l, 2, "b")
			got.expect(t, more...)
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("RunPoll returned %v, want context.Canceled", err)
			}
			mu.Lock()
			defer mu.Unlock()
			// Five events in pages of two take three pages, and the next two
			// at least one more.
			if len(cursors) < 4 || slices.Contains(cursors, first.Cursor) {
				t.Errorf("OnCursor saw %v; want at least 4 new cursors", cursors)
			}
		})
	}
}

// TestRunPollTruncated polls from a cursor the server does not know: it
// answers truncated, which OnCursor hears, and its error stops the loop.
func TestRunPollTruncated(t *testing.T) {
	l := memoryLink(t, "")
	c := connect(t, l, nil, nil)
	stop := errors.New("stop")
	bogus := "bm90LWEtY3Vyc29y"
	var got string
	cursor, err := c.RunPoll(ctxT(t), client.PollLoop{
		Request: client.EventsPollRequest{Name: "mcpe.filter", Arguments: sepFilter, Cursor: &bogus},
		OnEvent: newOccurrences().handle,
		OnCursor: func(_ context.Context, cursor string, truncated bool) error {
			if !truncated {
				return fmt.Errorf("cursor %s not truncated", cursor)
			}
			got = cursor
			return stop
		},
	})
	if !errors.Is(err, stop) || cursor == "" || cursor != got || cursor == bogus {
		t.Errorf("RunPoll = %q, %v; want the new cursor %q and the error of OnCursor", cursor, err, got)
	}
}

// streamUntil runs a stream in the background and returns a channel that
// is closed once it is active, and one that receives its end.
func streamUntil(ctx context.Context, c *client.Client, loop client.StreamLoop) (active <-chan struct{}, done <-chan error) {
	act := make(chan struct{})
	var once sync.Once
	saved := loop.OnCursor
	loop.OnCursor = func(ctx context.Context, cursor string, truncated bool) error {
		once.Do(func() { close(act) })
		if saved != nil {
			return saved(ctx, cursor, truncated)
		}
		return nil
	}
	end := make(chan error, 1)
	go func() {
		_, err := c.RunStream(ctx, loop)
		end <- err
	}()
	return act, end
}

func waitActive(t *testing.T, active <-chan struct{}, done <-chan error) {
	t.Helper()
	select {
	case <-active:
	case err := <-done:
		t.Fatalf("RunStream ended before the stream was active: %v", err)
	case <-time.After(wait):
		t.Fatal("the stream did not become active")
	}
}

// TestRunStreamResumes breaks the connection under a stream: the
// in-process server's HTTP connections are dropped, or the mcpe-server
// binary is killed with SIGKILL and started again on the same database. The stream resumes from its last
// cursor; every event comes once, in order.
func TestRunStreamResumes(t *testing.T) {
	for _, mk := range []func(*testing.T) link{
		// Closing the server's session would wait for the stream's
		// handler, which nothing ends (see TestStreamWatchdog for the
		// in-memory transport): the network fails instead.
		func(t *testing.T) link {
			l := httpLink(t, "")
			l.name = "http connections dropped"
			l.kill = func(*testing.T) { l.server.CloseConnections() }
			return l
		},
		func(t *testing.T) link {
			l := stdioLinkConfig(t, "", "subscriptions:\n  heartbeatInterval: 100ms\n")
			l.name = "stdio server killed"
			return l
		},
		func(t *testing.T) link {
			l := stdioLinkConfig(t, "2025-11-25", "subscriptions:\n  heartbeatInterval: 100ms\n")
			l.name = "stdio server killed"
			return l
		},
	} {
		l := mk(t)
		t.Run(l.name+"/"+l.negotiated, func(t *testing.T) {
			c := connect(t, l, &client.Options{Reconnect: l.transport, BackoffMin: 10 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Logger: testLogger(t)}, nil)
			ctx, cancel := context.WithCancel(ctxT(t))
			defer cancel()
			got := newOccurrences()
			active, done := streamUntil(ctx, c, client.StreamLoop{
				Request: client.EventsStreamRequest{Name: "mcpe.filter", Arguments: sepFilter},
				OnEvent: got.handle,
			})
			waitActive(t, active, done)
			before := publishN(t, l, 3, "before")
			got.expect(t, before...)
			l.kill(t)
			after := publishN(t, l, 3, "after")
			got.expect(t, after...)
			// Nothing was handled twice: the next event is the next one.
			last := publishN(t, l, 1, "last")
			got.expect(t, last...)
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("RunStream returned %v, want context.Canceled", err)
			}
		})
	}
}

// TestStreamWatchdog gives a stream less silence than the server's
// heartbeat interval (30s; its fake clock never moves): the watchdog ends
// and reopens it again and again, and no event is lost or repeated.
func TestStreamWatchdog(t *testing.T) {
	l := memoryLink(t, "")
	c := connect(t, l, &client.Options{Reconnect: l.transport, BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond}, nil)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	got := newOccurrences()
	var mu sync.Mutex
	var saved []string
	active, done := streamUntil(ctx, c, client.StreamLoop{
		Request: client.EventsStreamRequest{Name: "mcpe.filter", Arguments: sepFilter},
		OnEvent: got.handle,
		OnCursor: func(_ context.Context, cursor string, _ bool) error {
			mu.Lock()
			saved = append(saved, cursor)
			mu.Unlock()
			return nil
		},
		Silence: 50 * time.Millisecond,
	})
	waitActive(t, active, done)
	var ids []string
	for i := range 10 {
		ids = append(ids, publishN(t, l, 1, fmt.Sprint("w", i))...)
		time.Sleep(15 * time.Millisecond)
	}
	got.expect(t, ids...)
	last := publishN(t, l, 1, "last")
	got.expect(t, last...)
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(saved) < 2 {
		t.Errorf("OnCursor saw %v; want the cursor to move", saved)
	}
}

// TestTwoStreams opens two streams on one session: each gets its own
// subscription's events.
func TestTwoStreams(t *testing.T) {
	l := memoryLink(t, "")
	c := connect(t, l, nil, nil)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	a, b := newOccurrences(), newOccurrences()
	activeA, doneA := streamUntil(ctx, c, client.StreamLoop{Request: client.EventsStreamRequest{Name: "mcpe.filter", Arguments: json.RawMessage(`{"eventTypes":["sep.a"]}`)}, OnEvent: a.handle})
	activeB, doneB := streamUntil(ctx, c, client.StreamLoop{Request: client.EventsStreamRequest{Name: "mcpe.filter", Arguments: json.RawMessage(`{"eventTypes":["sep.b"]}`)}, OnEvent: b.handle})
	waitActive(t, activeA, doneA)
	waitActive(t, activeB, doneB)
	idA := l.publish(t, "sep.a", `{}`)
	idB := l.publish(t, "sep.b", `{}`)
	a.expect(t, idA)
	b.expect(t, idB)
	cancel()
	<-doneA
	<-doneB
	select {
	case o := <-a.ch:
		t.Errorf("stream a got %+v too", o)
	case o := <-b.ch:
		t.Errorf("stream b got %+v too", o)
	default:
	}
}
