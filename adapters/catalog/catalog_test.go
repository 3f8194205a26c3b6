package catalog

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

type fakePublisher struct{ dup bool }

func (f fakePublisher) Publish(context.Context, mcpe.Event) (subscriptions.PublishResult, error) {
	return subscriptions.PublishResult{EventID: "x", Duplicate: f.dup}, nil
}

func TestCatalog(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	github := []mcpe.EventType{
		{Type: "github.issues.opened", Description: "An issue was opened.", Example: json.RawMessage(`{"number":1}`)},
		{Type: "github.push", Description: "Commits were pushed."},
	}
	c := New(Options{Clock: clk, SeenLimit: 2, Sources: []Source{
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
			{Type: "build.done", Count: 1, LastSeenAt: t0.Add(2 * time.Minute)},
			{Type: "deploy.failed", Count: 2, LastSeenAt: t0.Add(time.Minute)},
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

	// The limit evicts the least recently seen; the window hides old ones.
	pub.Publish(context.Background(), mcpe.Event{Type: "third"})
	got, _ = c.Get(context.Background(), mcpe.CatalogRequest{})
	if len(got.SeenRecently) != 2 || got.SeenRecently[0].Type != "third" || got.SeenRecently[1].Type != "build.done" {
		t.Errorf("after eviction: %+v", got.SeenRecently)
	}
	clk.Advance(25 * time.Hour)
	got, _ = c.Get(context.Background(), mcpe.CatalogRequest{})
	if len(got.SeenRecently) != 0 {
		t.Errorf("after the window: %+v", got.SeenRecently)
	}
}
