package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// TestThrottleTool subscribes through events_subscribe with a throttle:
// the first event of a repository is notified at once, the next ones of it
// fold into one notification at the window's end, with folded, and
// events_poll holds the same; events_update takes a throttle, and
// mistakes in one are explained.
func TestThrottleTool(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect("alice", nil)
	throttle := map[string]any{"window": "10m", "groupBy": "data.repo"}
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"ci.failed"}},
		"delivery": map[string]any{"channels": []string{"realtime"}, "throttle": throttle}})
	if th := sub.Delivery.Throttle; th == nil || *th != (mcpe.Throttle{Window: "10m", GroupBy: "data.repo"}) {
		t.Fatalf("subscription's throttle = %+v; want the one given", th)
	}
	fail := func(repo string, n int) {
		e.publish("ci.failed", fmt.Sprintf(`{"repo": %q, "n": %d}`, repo, n), mcpe.Metadata{})
	}
	next := func() string {
		t.Helper()
		p, ev := c.NextEvent(t)
		var data struct{ Repo string }
		json.Unmarshal(ev.Data, &data)
		return fmt.Sprintf("%s folded %d", data.Repo, p.Folded)
	}
	fail("acme/api", 1)
	if got := next(); got != "acme/api folded 0" {
		t.Fatalf("first notification: %s", got)
	}
	fail("acme/api", 2)
	fail("acme/api", 3)
	fail("acme/web", 4)
	// Notifications keep their order: acme/web's comes next, so the two
	// of acme/api were not sent.
	if got := next(); got != "acme/web folded 0" {
		t.Fatalf("second notification: %s; want acme/web's", got)
	}
	e.clock.Advance(10 * time.Minute)
	p, ev := c.NextEvent(t)
	if p.Folded != 2 || !strings.Contains(string(ev.Data), `"n":3`) {
		t.Errorf("at the window's end: folded %d, event %s; want the latest, folding 2", p.Folded, ev.Data)
	}
	var poll mcpe.PollResult
	c.MustCall(t, "events_poll", map[string]any{"cursor": "0"}, &poll)
	if len(poll.Items) != 3 || poll.Items[2].Folded != 2 || poll.Items[0].Folded != 0 {
		t.Errorf("events_poll = %+v; want 3 items, the last folding 2", poll.Items)
	}

	for args, want := range map[string]string{
		`{"window": "1ms"}`:                     `delivery.throttle.window: "1ms" is not a duration from 1s to 24h`,
		`{"window": "1m", "groupBy": "repo"}`:   `"repo" is not a grouping; use "type", "priority"`,
		`{"windw": "1m"}`:                       `unknown field "windw" in delivery.throttle; delivery.throttle accepts "window", "groupBy"`,
		`{"window": "1m", "groupBy": "data.."}`: `"data.." is not a grouping`,
	} {
		got := c.CallError(t, "events_subscribe", json.RawMessage(`{"filter": {"eventTypes": ["x"]}, "delivery": {"channels": ["realtime"], "throttle": `+args+`}}`))
		if !strings.Contains(got, want) {
			t.Errorf("throttle %s: error %q; want it to contain %q", args, got, want)
		}
	}
	var updated mcpe.Subscription
	c.MustCall(t, "events_update", map[string]any{"subscriptionId": sub.ID,
		"delivery": map[string]any{"channels": []string{"realtime"}, "throttle": map[string]any{"window": "1h"}}}, &updated)
	if th := updated.Delivery.Throttle; th == nil || th.Window != "1h" || th.GroupBy != "" {
		t.Errorf("updated throttle = %+v; want one window of 1h for the whole subscription", th)
	}
}
