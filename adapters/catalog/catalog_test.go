package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// memoryStore returns a new store in memory, closed when t ends.
func memoryStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type fakePublisher struct{ dup bool }

func (f fakePublisher) Publish(context.Context, mcpe.Event) (subscriptions.PublishResult, error) {
	return subscriptions.PublishResult{EventID: "x", Duplicate: f.dup}, nil
}

func TestCatalog(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	github := []mcpe.EventType{
		{Type: "github.issues.opened", Description: "An issue was opened.", Example: json.RawMessage(`{"number":1}`)},
		{Type: "github.push", Description: "Commits were pushed."},
	}
	c := New(Options{Clock: clk, Store: memoryStore(t), seenLimit: 2, Sources: []Source{
		{Name: "github", Configured: true, Endpoint: "/adapters/github", Types: func() []mcpe.EventType { return github }},
		{Name: "slack", Description: "Slack Events API"},
		{Name: "mcp", Configured: true, Types: func() []mcpe.EventType { return nil },
			States: func() []mcpe.SourceState {
				return []mcpe.SourceState{{Name: "docs", Status: "retrying"}}
			}},
	}})
	pub := c.Publisher(fakePublisher{})
	for _, typ := range []string{"deploy.failed", "deploy.failed", "build.done"} {
		pub.Publish(context.Background(), mcpe.Event{Type: typ})
		clk.Advance(time.Minute)
	}
	c.Publisher(fakePublisher{dup: true}).Publish(context.Background(), mcpe.Event{Type: "dup.only"})

	got, err := c.Get(context.Background(), mcpe.CatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	want := &mcpe.Catalog{
		Sources: []mcpe.CatalogSource{
			{Name: "github", Configured: true, Endpoint: "/adapters/github"},
			{Name: "slack", Description: "Slack Events API"},
			{Name: "mcp", Configured: true, Upstreams: []mcpe.SourceState{{Name: "docs", Status: "retrying"}}},
		},
		Types: []mcpe.CatalogType{{Source: "github", EventType: github[0]}, {Source: "github", EventType: github[1]}},
		SeenRecently: []mcpe.SeenType{
			{Type: "build.done", LastSeenAt: t0.Add(2 * time.Minute)},
			{Type: "deploy.failed", LastSeenAt: t0.Add(time.Minute)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("catalog mismatch (-want +got):\n%s", diff)
	}

	got, _ = c.Get(context.Background(), mcpe.CatalogRequest{Pattern: "github.issues.*"})
	if len(got.Types) != 1 || got.Types[0].Type != "github.issues.opened" || len(got.SeenRecently) != 0 {
		t.Errorf("pattern github.issues.*: %+v", got)
	}
	if _, err := c.Get(context.Background(), mcpe.CatalogRequest{Pattern: "[oops"}); err == nil {
		t.Error("a bad pattern was accepted")
	}

	// Past the limit a new type waits for room: the types listed stay; the
	// window hides old ones, which makes room.
	pub.Publish(context.Background(), mcpe.Event{Type: "third"})
	got, _ = c.Get(context.Background(), mcpe.CatalogRequest{})
	if len(got.SeenRecently) != 2 || got.SeenRecently[0].Type != "build.done" || got.SeenRecently[1].Type != "deploy.failed" {
		t.Errorf("past the limit: %+v", got.SeenRecently)
	}
	clk.Advance(25 * time.Hour)
	got, _ = c.Get(context.Background(), mcpe.CatalogRequest{})
	if len(got.SeenRecently) != 0 {
		t.Errorf("after the window: %+v", got.SeenRecently)
	}
	pub.Publish(context.Background(), mcpe.Event{Type: "third"})
	got, _ = c.Get(context.Background(), mcpe.CatalogRequest{})
	if len(got.SeenRecently) != 1 || got.SeenRecently[0].Type != "third" {
		t.Errorf("after the window, a new type: %+v", got.SeenRecently)
	}
}

// TestFloodOfNewTypes checks that a flood of new types, from one source
// or from many, pushes out none of the types seen before it: one source
// lists at most a quarter of seenLimit, and past seenLimit new types wait
// for room.
func TestFloodOfNewTypes(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	c := New(Options{Clock: clk, Store: memoryStore(t), seenLimit: 8})
	seen := func() []string {
		got, err := c.Get(context.Background(), mcpe.CatalogRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range got.SeenRecently {
			out = append(out, s.Type)
		}
		slices.Sort(out)
		return out
	}
	c.Observe(context.Background(), "deploy.failed")
	c.Observe(context.Background(), "build.done")
	for i := range 100 {
		clk.Advance(time.Second)
		c.Observe(context.Background(), fmt.Sprintf("flood.t%d", i))
	}
	want := []string{"build.done", "deploy.failed", "flood.t0", "flood.t1"}
	if diff := cmp.Diff(want, seen()); diff != "" {
		t.Errorf("after a flood from one source, mismatch (-want +got):\n%s", diff)
	}
	c.Observe(context.Background(), "ci.passed") // another source still has room
	for i := range 100 {
		clk.Advance(time.Second)
		c.Observe(context.Background(), fmt.Sprintf("f%d.x", i))
	}
	want = []string{"build.done", "ci.passed", "deploy.failed", "f0.x", "f1.x", "f2.x", "flood.t0", "flood.t1"}
	if diff := cmp.Diff(want, seen()); diff != "" {
		t.Errorf("after a flood from many sources, mismatch (-want +got):\n%s", diff)
	}
}

func TestWatchSeenTypes(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clk := clocktest.NewFake(t0)
	c := New(Options{Clock: clk, Store: memoryStore(t), seenWindow: time.Hour, seenLimit: 10})
	calls := 0
	stop := c.Watch(func() { calls++ })
	seen := func() []string {
		got, err := c.Get(context.Background(), mcpe.CatalogRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range got.SeenRecently {
			out = append(out, s.Type)
		}
		return out
	}

	c.Observe(context.Background(), "deploy.failed")
	c.Observe(context.Background(), "deploy.failed") // seen again: the list is the same
	if calls != 1 {
		t.Fatalf("watcher called %d times after one new type, want 1", calls)
	}
	clk.Advance(30 * time.Minute)
	c.Observe(context.Background(), "build.done")
	if calls != 2 {
		t.Fatalf("watcher called %d times after two new types, want 2", calls)
	}
	// deploy.failed leaves the window an hour after it was last seen; the
	// timer drops it and says so.
	clk.Advance(30*time.Minute + time.Second)
	if calls != 3 {
		t.Fatalf("watcher called %d times after a type aged out, want 3", calls)
	}
	if got := seen(); !slices.Equal(got, []string{"build.done"}) {
		t.Fatalf("seen after expiry = %v, want [build.done]", got)
	}
	// Seen again, build.done stays; the timer re-arms for its new time
	// (the watcher may be called when it fires for the old one).
	clk.Advance(20 * time.Minute)
	c.Observe(context.Background(), "build.done")
	clk.Advance(20 * time.Minute)
	if got := seen(); !slices.Equal(got, []string{"build.done"}) {
		t.Fatalf("seen after build.done was posted again = %v, want [build.done]", got)
	}
	before := calls
	clk.Advance(time.Hour)
	if calls != before+1 || len(seen()) != 0 {
		t.Fatalf("after build.done aged out: %d calls, seen %v; want %d calls and nothing", calls, seen(), before+1)
	}
	stop()
	c.Observe(context.Background(), "other.type")
	if calls != before+1 {
		t.Fatalf("watcher called after stop")
	}
}

// countingStore counts the reads of the kept types, and the requests to
// keep one.
type countingStore struct {
	subscriptions.TypeStore
	reads, keeps int
}

func (s *countingStore) KeepType(ctx context.Context, t string, now time.Time, window time.Duration, limit int) (bool, error) {
	s.keeps++
	return s.TypeStore.KeepType(ctx, t, now, window, limit)
}

func (s *countingStore) KeptTypes(ctx context.Context, now time.Time, window time.Duration) ([]mcpe.SeenType, error) {
	s.reads++
	return s.TypeStore.KeptTypes(ctx, now, window)
}

// TestRefusedTypeAskedOncePerMinute checks that a type the store does not
// keep (its source's share is full) is not asked for again at each event
// of it: a flood of one refused type costs the store one write a minute.
func TestRefusedTypeAskedOncePerMinute(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	store := &countingStore{TypeStore: memoryStore(t)}
	c := New(Options{Clock: clk, Store: store, seenLimit: 4}) // one type a source
	var listed int
	defer c.Watch(func() { listed++ })()
	ctx := t.Context()
	c.Observe(ctx, "deploy.failed")
	for range 100 {
		c.Observe(ctx, "deploy.started")
	}
	if store.keeps != 2 {
		t.Errorf("a kept type and 100 events of a refused one asked the store %d times; want 2", store.keeps)
	}
	clk.Advance(keepEvery)
	c.Observe(ctx, "deploy.started")
	if store.keeps != 3 {
		t.Errorf("a minute later the refused type was asked %d times in all; want 3", store.keeps)
	}
	if listed != 1 { // for deploy.failed
		t.Errorf("watchers called %d times; want 1: a refused type changes no list", listed)
	}
}

// Every events_subscribe looks the catalog up for its warnings: the kept
// types are read from the store once a second at most, and again at once
// after this process kept a new one; what another process kept is listed
// within the second.
func TestKeptTypesReadOncePerSecond(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	shared := memoryStore(t)
	store := &countingStore{TypeStore: shared}
	c := New(Options{Clock: clk, Store: store})
	ctx := t.Context()
	seen := func() []string {
		t.Helper()
		cat, err := c.Get(ctx, mcpe.CatalogRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range cat.SeenRecently {
			out = append(out, s.Type)
		}
		return out
	}
	c.Observe(ctx, "deploy.failed")
	for range 100 {
		if got := seen(); !slices.Equal(got, []string{"deploy.failed"}) {
			t.Fatalf("seen = %q; want [deploy.failed]", got)
		}
	}
	if store.reads != 1 {
		t.Errorf("100 lookups read the kept types %d times; want 1", store.reads)
	}
	c.Observe(ctx, "deploy.started")
	if got := seen(); len(got) != 2 {
		t.Errorf("after a new type was kept here, seen = %q; want both", got)
	}
	if _, err := shared.KeepType(ctx, "build.done", clk.Now(), DefaultSeenWindow, DefaultSeenLimit); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if got := seen(); len(got) != 3 {
		t.Errorf("a second after another process kept build.done, seen = %q; want it too", got)
	}
}
