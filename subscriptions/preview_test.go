package subscriptions_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// TestPreview checks events_subscribe's dry run: it counts what a filter
// (patterns, tags, priority) matched among the events delivered to the
// caller over the last day, each once, returns the newest few, newest
// first, never another principal's events, and creates nothing.
func TestPreview(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.NewFake(svcStart)
	f, _ := newTimed(t, filepath.Join(t.TempDir(), "mcpe.db"), clk)
	f.subscribe("alice", every("github.*"))
	f.subscribe("alice", every("github.issues.*", "deploy.*")) // one entry for an event both match
	// A digest delivers deploy.failed a second time, once the last hour
	// of fake time below passed.
	f.subscribe("alice", mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"deploy.*"}},
		Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{"scheduled"}, ScheduledDelivery: &mcpe.ScheduledDelivery{DeliverAt: "2026-03-02T10:30:00Z"}}})
	f.subscribe("bob", every("*"))
	publish := func(typ string, p mcpe.Priority, tags ...string) string {
		t.Helper()
		res, err := f.svc.Publish(ctx, mcpe.Event{Type: typ, Data: json.RawMessage(`{}`), Metadata: mcpe.Metadata{Priority: p, Tags: tags}})
		if err != nil {
			t.Fatal(err)
		}
		return res.EventID
	}
	publish("github.push", mcpe.PriorityCritical, "old") // delivered more than a day before the preview
	clk.Advance(mcpe.PreviewWindow + time.Hour)
	push := publish("github.push", mcpe.PriorityNormal, "main")
	high := publish("github.issues.opened", mcpe.PriorityHigh, "bug")
	crit := publish("github.issues.opened", mcpe.PriorityCritical, "bug")
	publish("slack.message", mcpe.PriorityCritical, "main") // alice has no subscription for it
	deploy := publish("deploy.failed", mcpe.PriorityCritical)
	// Another principal's private event, with everything alice looks for.
	if _, err := f.svc.PublishFor(ctx, "bob", mcpe.Event{Type: "github.issues.opened", Data: json.RawMessage(`{}`),
		Metadata: mcpe.Metadata{Priority: mcpe.PriorityCritical, Tags: []string{"main", "bug", "old"}}}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if got := f.rec.batches(); len(got) != 1 {
		t.Fatalf("digests delivered: %v, want one", got)
	}

	for _, tc := range []struct {
		name   string
		filter mcpe.Filter
		types  map[string]int
		events []string
	}{
		{"pattern", mcpe.Filter{EventTypes: []string{"github.*"}},
			map[string]int{"github.push": 1, "github.issues.opened": 2}, []string{crit, high, push}},
		{"every type, newest 3", mcpe.Filter{EventTypes: []string{"*"}},
			map[string]int{"github.push": 1, "github.issues.opened": 2, "deploy.failed": 1}, []string{deploy, crit, high}},
		{"priority", mcpe.Filter{EventTypes: []string{"github.issues.*"}, Priority: []mcpe.Priority{mcpe.PriorityCritical}},
			map[string]int{"github.issues.opened": 1}, []string{crit}},
		{"tags", mcpe.Filter{Tags: []string{"main", "nothing"}},
			map[string]int{"github.push": 1}, []string{push}},
		{"outside the window", mcpe.Filter{Tags: []string{"old"}}, map[string]int{}, []string{}},
		{"exact type seen only by others", mcpe.Filter{EventTypes: []string{"slack.message"}}, map[string]int{}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := f.svc.List(ctx, "alice", "")
			if err != nil {
				t.Fatal(err)
			}
			res, err := f.svc.Preview(ctx, "alice", mcpe.SubscribeRequest{Filter: tc.filter})
			if err != nil {
				t.Fatal(err)
			}
			matched := 0
			for _, n := range tc.types {
				matched += n
			}
			ids := []string{}
			for _, raw := range res.Events {
				var ev mcpe.Event
				if err := json.Unmarshal(raw, &ev); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, ev.ID)
			}
			if res.Matched != matched {
				t.Errorf("matched %d, want %d", res.Matched, matched)
			}
			if diff := cmp.Diff(tc.types, res.Types); diff != "" {
				t.Errorf("types mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.events, ids); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
			if want := clk.Now().UTC().Add(-mcpe.PreviewWindow); !res.Since.Equal(want) {
				t.Errorf("since %s, want %s", res.Since, want)
			}
			after, err := f.svc.List(ctx, "alice", "")
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(before) {
				t.Errorf("a dry run changed alice's subscriptions from %d to %d", len(before), len(after))
			}
		})
	}
	if _, err := f.svc.Preview(ctx, "alice", mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"bad..type"}}}); err == nil {
		t.Error("a dry run accepted an invalid pattern")
	}
	if res, err := f.svc.Preview(ctx, "carol", mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"*"}}}); err != nil || res.Matched != 0 || len(res.Events) != 0 {
		t.Errorf("a principal with an empty inbox got %+v, %v; want nothing matched", res, err)
	}
}

// TestPreviewLooksAtABoundedNumberOfEvents checks that a dry run decodes at
// most the bound of events (a hostile model may ask again and again), and
// says from when it counted.
func TestPreviewLooksAtABoundedNumberOfEvents(t *testing.T) {
	defer subscriptions.SetPreviewEvents(3)()
	ctx := context.Background()
	clk := clocktest.NewFake(svcStart)
	f, _ := newTimed(t, filepath.Join(t.TempDir(), "mcpe.db"), clk)
	f.subscribe("alice", every("x.*"))
	var times []time.Time
	for range 5 {
		clk.Advance(time.Minute)
		times = append(times, clk.Now().UTC())
		if _, err := f.svc.Publish(ctx, mcpe.Event{Type: "x.y", Data: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := f.svc.Preview(ctx, "alice", mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"x.*"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Matched != 3 {
		t.Errorf("matched %d, want the 3 newest", res.Matched)
	}
	if !res.Since.After(times[1]) || res.Since.After(times[2]) {
		t.Errorf("since %s; want after %s (the newest left out) and at most %s", res.Since, times[1], times[2])
	}
}
