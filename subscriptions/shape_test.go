package subscriptions_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// TestLabelAndShape checks that a subscription's label and its delivery's
// fields and maxEventBytes are kept, changed by events_update, refused
// with a reason when out of bounds, and shape what events_poll and a dry
// run return of its events (an entry shared with a subscription of another
// shape comes whole).
func TestLabelAndShape(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.NewFake(svcStart.Add(1234567 * time.Nanosecond))
	f := newFixture(t, filepath.Join(t.TempDir(), "mcpe.db"), clk, subscriptions.ServiceOptions{})
	fields := &mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelRealtime}, Fields: []string{"issue.title"}}
	for _, tc := range []struct {
		req  mcpe.SubscribeRequest
		want string
	}{
		{mcpe.SubscribeRequest{Label: strings.Repeat("x", 101), Filter: mcpe.Filter{EventTypes: []string{"a"}}}, "label: is 101 characters long"},
		{mcpe.SubscribeRequest{Label: "a\nb", Filter: mcpe.Filter{EventTypes: []string{"a"}}}, "on one line"},
		{mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"a"}}, Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelRealtime}, MaxEventBytes: 10}}, "delivery.maxEventBytes: is 10"},
	} {
		var inv *mcpe.InvalidError
		if _, err := f.svc.Subscribe(ctx, "alice", tc.req); !errors.As(err, &inv) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("subscribe %+v: got %v, want an error with %q", tc.req, err, tc.want)
		}
	}
	sub := f.subscribe("alice", mcpe.SubscribeRequest{Label: "new issues", Filter: mcpe.Filter{EventTypes: []string{"github.issues.opened"}}, Delivery: fields})
	if label, d := f.svc.Rendering(sub.ID); sub.Label != "new issues" || label != "new issues" || len(d.Fields) != 1 {
		t.Fatalf("subscribed with label %q; Rendering gives %q, %+v", sub.Label, label, d)
	}
	issue := `{"issue":{"title":"T","body":"long"}}`
	if _, err := f.svc.Publish(ctx, mcpe.Event{Type: "github.issues.opened", Data: json.RawMessage(issue)}); err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Poll(ctx, "alice", mcpe.PollRequest{Cursor: "0"})
	if err != nil || len(res.Items) != 1 {
		t.Fatalf("poll: %v, %+v", err, res)
	}
	if got := dataOf(t, res.Items[0].Event); got != `{"issue":{"title":"T"}}` {
		t.Errorf("polled data %s, want only issue.title", got)
	}
	if item := res.Items[0]; item.Events != nil || item.DeliveredAt.Nanosecond()%int(time.Millisecond) != 0 {
		t.Errorf("polled item has events %#v, deliveredAt %s: want none, and milliseconds", item.Events, item.DeliveredAt.Format(time.RFC3339Nano))
	}
	dry, err := f.svc.Preview(ctx, "alice", mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"github.*"}}, Delivery: fields})
	if err != nil || len(dry.Events) != 1 || dataOf(t, dry.Events[0]) != `{"issue":{"title":"T"}}` {
		t.Errorf("dry run: %v, %s", err, dry.Events)
	}
	if _, err := f.svc.Preview(ctx, "alice", mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"a"}},
		Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelRealtime}, Fields: []string{".x"}}}); err == nil || !strings.Contains(err.Error(), "delivery.fields[0]") {
		t.Errorf("dry run with a bad path: %v", err)
	}

	// A second subscription of another shape: the entry both match comes whole.
	f.subscribe("alice", every("github.*"))
	if _, err := f.svc.Publish(ctx, mcpe.Event{Type: "github.issues.opened", Data: json.RawMessage(issue)}); err != nil {
		t.Fatal(err)
	}
	if res, err = f.svc.Poll(ctx, "alice", mcpe.PollRequest{}); err != nil || len(res.Items) != 1 || dataOf(t, res.Items[0].Event) != issue {
		t.Errorf("poll of an entry for two shapes: %v, %+v", err, res)
	}

	for _, tc := range []struct {
		label *string
		want  string
	}{
		{new("PRs"), "PRs"},
		{new(""), ""},
	} {
		up, err := f.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID, Label: tc.label})
		if label, _ := f.svc.Rendering(sub.ID); err != nil || up.Label != tc.want || label != tc.want {
			t.Errorf("update label to %q: %v, %q, rendering %q", *tc.label, err, up.Label, label)
		}
	}
	if _, err := f.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID, Label: new(strings.Repeat("é", 101))}); err == nil || !strings.Contains(err.Error(), "at most 100 characters") {
		t.Errorf("update to a long label: %v", err)
	}
}

func dataOf(t *testing.T, event json.RawMessage) string {
	t.Helper()
	var ev struct{ Data json.RawMessage }
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatalf("%s: %v", event, err)
	}
	return string(ev.Data)
}
