package catalog

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

type fakePublisher struct{ dup bool }

func (f fakePublisher) Publish(context.Context, subscriptions.Event) (subscriptions.PublishResult, error) {
	return subscriptions.PublishResult{EventID: "x", Duplicate: f.dup}, nil
}

func TestCatalog(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	github := []subscriptions.EventType{
		{Type: "github.issues.opened", Description: "An issue was opened.", Example: json.RawMessage(`{"number":1}`)},
		{Type: "github.push", Description: "Commits were pushed."},
	}
	c := New(Options{Clock: clk, SeenLimit: 2, Sources: []Source{
		{Name: "github", Configured: true, Endpoint: "/adapters/github", Types: func() []subscriptions.EventType { return github }},
		{Name: "slack", Description: "Slack Events API"},
		{Name: "mcp", Configured: true, Types: func() []subscriptions.EventType { return nil },
			States: func() []subscriptions.SourceState {
				return []subscriptions.SourceState{{Name: "docs", Status: "retrying"}}
			}},
	}})
	pub := c.Publisher(fakePublisher{})
	for _, typ := range []string{"deploy.failed", "deploy.failed", "build.done"} {
		pub.Publish(context.Background(), subscriptions.Event{Type: typ})
		clk.Advance(time.Minute)
	}
	c.Publisher(fakePublisher{dup: true}).Publish(context.Background(), subscriptions.Event{Type: "dup.only"})

	got, err := c.Get(context.Background(), subscriptions.CatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	want := &subscriptions.Catalog{
		Sources: []subscriptions.CatalogSource{
			{Name: "github", Configured: true, Endpoint: "/adapters/github"},
			{Name: "slack", Description: "Slack Events API"},
			{Name: "mcp", Configured: true, Upstreams: []subscriptions.SourceState{{Name: "docs", Status: "retrying"}}},
		},
		Types: []subscriptions.CatalogType{{Source: "github", EventType: github[0]}, {Source: "github", EventType: github[1]}},
		SeenRecently: []subscriptions.SeenType{
			{Type: "build.done", Count: 1, LastSeenAt: t0.Add(2 * time.Minute)},
			{Type: "deploy.failed", Count: 2, LastSeenAt: t0.Add(time.Minute)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("catalog mismatch (-want +got):\n%s", diff)
	}

	got, _ = c.Get(context.Background(), subscriptions.CatalogRequest{Pattern: "github.issues.*"})
	if len(got.Types) != 1 || got.Types[0].Type != "github.issues.opened" || len(got.SeenRecently) != 0 {
		t.Errorf("pattern github.issues.*: %+v", got)
	}
	if _, err := c.Get(context.Background(), subscriptions.CatalogRequest{Pattern: "[oops"}); err == nil {
		t.Error("a bad pattern was accepted")
	}

	// The limit evicts the least recently seen; the window hides old ones.
	pub.Publish(context.Background(), subscriptions.Event{Type: "third"})
	got, _ = c.Get(context.Background(), subscriptions.CatalogRequest{})
	if len(got.SeenRecently) != 2 || got.SeenRecently[0].Type != "third" || got.SeenRecently[1].Type != "build.done" {
		t.Errorf("after eviction: %+v", got.SeenRecently)
	}
	clk.Advance(25 * time.Hour)
	got, _ = c.Get(context.Background(), subscriptions.CatalogRequest{})
	if len(got.SeenRecently) != 0 {
		t.Errorf("after the window: %+v", got.SeenRecently)
	}
}
