package subscriptions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// throttledReq subscribes to ci.failed, at most one per window per repo.
func throttledReq(window string) mcpe.SubscribeRequest {
	req := every("ci.failed")
	req.Delivery = &mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelRealtime},
		Throttle: &mcpe.Throttle{Window: window, GroupBy: "data.repo"}}
	return req
}

func (f *fixture) failed(repo string, n int) {
	f.t.Helper()
	data := fmt.Sprintf(`{"repo": %q, "n": %d}`, repo, n)
	if _, err := f.svc.Publish(context.Background(), mcpe.Event{Type: "ci.failed", Data: json.RawMessage(data)}); err != nil {
		f.t.Fatal(err)
	}
}

// inboxOf describes principal's inbox: "n<N>" for each event, "+<folded>"
// for one that stands for others.
func (f *fixture) inboxOf(principal string) string {
	f.t.Helper()
	res, err := f.svc.Poll(context.Background(), principal, mcpe.PollRequest{Cursor: "0"})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, it := range res.Items {
		var ev struct{ Data struct{ N int } }
		if err := json.Unmarshal(it.Event, &ev); err != nil {
			f.t.Fatalf("item %+v: %v", it, err)
		}
		s := fmt.Sprintf("n%d", ev.Data.N)
		if it.Folded > 0 {
			s += fmt.Sprintf("+%d", it.Folded)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestThrottleSurvivesRestart stops the server inside a window: the one
// started after it ends the window, with every fold.
func TestThrottleSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	clk := clocktest.NewFake(svcStart)
	f := newFixture(t, path, clk, subscriptions.ServiceOptions{})
	f.subscribe("alice", throttledReq("10m"))
	f.failed("acme/api", 1)
	clk.Advance(time.Minute)
	f.failed("acme/api", 2)
	f.failed("acme/web", 3)
	f.failed("acme/api", 4)
	if got, want := f.inboxOf("alice"), "n1 n3"; got != want {
		t.Fatalf("inbox before the restart = %q; want %q", got, want)
	}
	f.stop()

	clk.Advance(4 * time.Minute)
	f2 := newFixture(t, path, clk, subscriptions.ServiceOptions{})
	clk.Advance(5 * time.Minute) // acme/api's window ends
	if got, want := f2.inboxOf("alice"), "n1 n3 n4+2"; got != want {
		t.Errorf("inbox after acme/api's window = %q; want %q", got, want)
	}
	if n := len(f2.rec.delivered()); n != 1 {
		t.Errorf("the restarted server delivered %d entries; want the fold", n)
	}
	clk.Advance(time.Hour) // acme/web's window ends with nothing folded
	f2.failed("acme/web", 5)
	if got, want := f2.inboxOf("alice"), "n1 n3 n4+2 n5"; got != want {
		t.Errorf("inbox = %q; want %q", got, want)
	}
}

// TestThrottleTwoServersFoldOnce has two servers on one database take
// events for one group: they fold into one window, which ends once.
func TestThrottleTwoServersFoldOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	clk := clocktest.NewFake(svcStart)
	f := newFixture(t, path, clk, subscriptions.ServiceOptions{})
	f.subscribe("alice", throttledReq("1m"))
	f2 := newFixture(t, path, clk, subscriptions.ServiceOptions{})
	for n := 1; n <= 6; n++ {
		[]*fixture{f, f2}[n%2].failed("acme/api", n)
	}
	clk.Advance(time.Minute)
	if got, want := f.inboxOf("alice"), "n1 n6+5"; got != want {
		t.Errorf("inbox = %q; want %q", got, want)
	}
	if n := len(f.rec.delivered()) + len(f2.rec.delivered()); n != 2 {
		t.Errorf("the servers delivered %d entries; want 2", n)
	}
}

// TestThrottleRefused checks what throttle accepts.
func TestThrottleRefused(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "mcpe.db"), clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	for _, tc := range []struct {
		throttle mcpe.Throttle
		want     string
	}{
		{mcpe.Throttle{Window: "500ms"}, `delivery.throttle.window: "500ms" is not a duration from 1s to 24h; use e.g. "30s", "10m" or "2h"`},
		{mcpe.Throttle{Window: "25h"}, `"25h" is not a duration from 1s to 24h`},
		{mcpe.Throttle{Window: "10 minutes"}, `"10 minutes" is not a duration`},
		{mcpe.Throttle{Window: "1m", GroupBy: "repository"}, `delivery.throttle.groupBy: "repository" is not a grouping; use "type", "priority", "tag:"`},
		{mcpe.Throttle{Window: "1m", GroupBy: "data."}, `"data." is not a grouping`},
		{mcpe.Throttle{Window: "1m", GroupBy: "data.a..b"}, `"data.a..b" is not a grouping`},
		{mcpe.Throttle{Window: "1m", GroupBy: "tag:"}, `"tag:" is not a grouping`},
	} {
		req := throttledReq("")
		req.Delivery.Throttle = &tc.throttle
		if _, err := f.svc.Subscribe(context.Background(), "alice", req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("throttle %+v: error %v; want it to contain %q", tc.throttle, err, tc.want)
		}
	}
	digest := mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelCron}, CronSchedule: &mcpe.CronSchedule{Expression: "@daily"},
		Throttle: &mcpe.Throttle{Window: "1m"}}
	if err := digest.Validate([]mcpe.Channel{mcpe.ChannelRealtime, mcpe.ChannelCron}); err == nil || !strings.Contains(err.Error(), `has no "realtime"`) {
		t.Errorf("throttle on a digest: error %v; want one saying it needs realtime", err)
	}
}

// TestThrottleEndedByAnotherServer stops the server that opened a window:
// another one on the same database, which follows what it wrote, ends it.
func TestThrottleEndedByAnotherServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	clk := clocktest.NewFake(svcStart)
	f := newFixture(t, path, clk, subscriptions.ServiceOptions{})
	f.subscribe("alice", throttledReq("1m"))
	f2 := newFixture(t, path, clk, subscriptions.ServiceOptions{})
	f.failed("acme/api", 1)
	f.failed("acme/api", 2)
	f.stop()
	got := ""
	for deadline := time.Now().Add(10 * time.Second); got != "n1 n2+1" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		clk.Advance(time.Second)
		got = f2.inboxOf("alice")
	}
	if got != "n1 n2+1" {
		t.Errorf("inbox = %q; want the window ended by the other server, %q", got, "n1 n2+1")
	}
}
