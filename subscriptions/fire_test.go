package subscriptions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/delivery/cron"
	"github.com/mcpe-server/mcpe-server/delivery/scheduled"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

var newYork = mustZone("America/New_York")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// presence is a Presence whose answer the test sets.
type presence struct{ away atomic.Bool }

func (p *presence) Connected(string) bool { return !p.away.Load() }

func timedOptions(p *presence) subscriptions.ServiceOptions {
	return subscriptions.ServiceOptions{
		Presence: p,
		// These tests cross days of fake time; retention is tested elsewhere.
		PruneInterval: 24 * time.Hour,
		Timings: map[mcpe.Channel]subscriptions.Timing{
			mcpe.ChannelCron:      cron.New(nil),
			mcpe.ChannelScheduled: scheduled.Channel{},
		},
	}
}

func newTimed(t *testing.T, path string, clk *clocktest.Fake) (*fixture, *presence) {
	p := &presence{}
	return newFixture(t, path, clk, timedOptions(p)), p
}

func cronReq(expr, zone string, types ...string) mcpe.SubscribeRequest {
	return mcpe.SubscribeRequest{
		Filter:   mcpe.Filter{EventTypes: types},
		Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{"cron"}, CronSchedule: &mcpe.CronSchedule{Expression: expr, Timezone: zone}},
	}
}

// batches returns the digests delivered so far, as "subscriptionID: n1 n2 ...
// (remaining r)" using each event's data.n.
func (r *recorder) batches() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.entries {
		if e.Kind != mcpe.InboxBatch {
			continue
		}
		var ns []string
		for _, ev := range e.Events {
			var v struct {
				Data struct{ N int } `json:"data"`
			}
			json.Unmarshal(ev, &v)
			ns = append(ns, fmt.Sprint(v.Data.N))
		}
		out = append(out, fmt.Sprintf("%s: %s (remaining %d)", e.SubscriptionIDs[0][:8], strings.Join(ns, " "), e.Remaining))
	}
	return out
}

func (f *fixture) publishN(typ string, n int) {
	f.t.Helper()
	if _, err := f.svc.Publish(context.Background(), mcpe.Event{Type: typ, Data: json.RawMessage(fmt.Sprintf(`{"n": %d}`, n))}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) get(id string) *subscriptions.Subscription {
	f.t.Helper()
	sub, err := f.svc.Get(context.Background(), "alice", id)
	if err != nil {
		f.t.Fatal(err)
	}
	return sub
}

func TestCronDigest(t *testing.T) {
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 0, 0, 0, newYork)))
	sub := f.subscribe("alice", cronReq("0 9 * * *", "America/New_York", "gh.*"))
	want := &mcpe.DeliveryTime{At: "2026-03-02T09:00:00-05:00", UTC: "2026-03-02T14:00:00Z"}
	if diff := cmp.Diff(want, sub.NextDelivery); diff != "" {
		t.Errorf("nextDelivery mismatch (-want +got):\n%s", diff)
	}
	cs := sub.Delivery.CronSchedule
	if cs.Timezone != "America/New_York" || cs.AggregateEvents == nil || !*cs.AggregateEvents || cs.MaxEventsPerDelivery != 100 {
		t.Errorf("cronSchedule with defaults = %+v", cs)
	}
	for n := 1; n <= 3; n++ {
		f.publishN("gh.issue", n)
	}
	f.publishN("other", 99)
	if got := f.get(sub.ID).BufferedEvents; got != 3 {
		t.Errorf("bufferedEvents = %d, want 3", got)
	}
	if got := f.rec.batches(); len(got) != 0 {
		t.Fatalf("delivered before the fire: %v", got)
	}
	f.clock.AdvanceTo(time.Date(2026, 3, 2, 9, 0, 0, 0, newYork))
	if diff := cmp.Diff([]string{sub.ID[:8] + ": 1 2 3 (remaining 0)"}, f.rec.batches()); diff != "" {
		t.Errorf("digest mismatch (-want +got):\n%s", diff)
	}
	after := f.get(sub.ID)
	if after.BufferedEvents != 0 || after.DeliveredCount != 3 || after.NextDelivery.UTC != "2026-03-03T14:00:00Z" {
		t.Errorf("after the fire: buffered %d, delivered %d, next %+v", after.BufferedEvents, after.DeliveredCount, after.NextDelivery)
	}
	// An empty buffer sends nothing.
	f.clock.AdvanceTo(time.Date(2026, 3, 3, 9, 0, 0, 0, newYork))
	if got := f.rec.batches(); len(got) != 1 {
		t.Errorf("an empty digest was sent: %v", got)
	}
}

func TestCronDigestCapAndRemaining(t *testing.T) {
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)))
	req := cronReq("@hourly", "", "x")
	req.Delivery.CronSchedule.MaxEventsPerDelivery = 2
	sub := f.subscribe("alice", req)
	for n := 1; n <= 5; n++ {
		f.publishN("x", n)
	}
	for range 4 {
		f.clock.Advance(time.Hour)
	}
	id := sub.ID[:8]
	want := []string{id + ": 1 2 (remaining 3)", id + ": 3 4 (remaining 1)", id + ": 5 (remaining 0)"}
	if diff := cmp.Diff(want, f.rec.batches()); diff != "" {
		t.Errorf("digests mismatch (-want +got):\n%s", diff)
	}
}

func TestCronWithoutAggregation(t *testing.T) {
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)))
	req := cronReq("@hourly", "", "x")
	no := false
	req.Delivery.CronSchedule.AggregateEvents = &no
	sub := f.subscribe("alice", req)
	f.publishN("x", 1)
	f.publishN("x", 2)
	f.clock.Advance(time.Hour)
	if diff := cmp.Diff([]string{"alice " + sub.ID, "alice " + sub.ID}, f.rec.delivered()); diff != "" {
		t.Errorf("single events mismatch (-want +got):\n%s", diff)
	}
	if got := f.rec.batches(); len(got) != 0 {
		t.Errorf("batches sent without aggregation: %v", got)
	}
}

// TestCronWithoutAggregationCapAndOrder checks that without aggregation the
// cap still applies per fire and the events go out oldest first, each as
// its own events/event, the rest leading the next fire.
func TestCronWithoutAggregationCapAndOrder(t *testing.T) {
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)))
	req := cronReq("@hourly", "", "x")
	no := false
	req.Delivery.CronSchedule.AggregateEvents = &no
	req.Delivery.CronSchedule.MaxEventsPerDelivery = 2
	sub := f.subscribe("alice", req)
	for n := 1; n <= 3; n++ {
		f.publishN("x", n)
	}
	singles := func() []string {
		f.rec.mu.Lock()
		defer f.rec.mu.Unlock()
		var out []string
		for _, e := range f.rec.entries {
			if e.Kind != mcpe.InboxEvent {
				continue
			}
			var v struct {
				Data struct{ N int } `json:"data"`
			}
			json.Unmarshal(e.Event, &v)
			out = append(out, fmt.Sprintf("%s %d", e.SubscriptionIDs[0][:8], v.Data.N))
		}
		return out
	}
	id := sub.ID[:8]
	f.clock.Advance(time.Hour)
	if diff := cmp.Diff([]string{id + " 1", id + " 2"}, singles()); diff != "" {
		t.Errorf("first fire mismatch (-want +got):\n%s", diff)
	}
	if got := f.get(sub.ID).BufferedEvents; got != 1 {
		t.Errorf("bufferedEvents after the first fire = %d, want 1", got)
	}
	f.clock.Advance(time.Hour)
	if diff := cmp.Diff([]string{id + " 1", id + " 2", id + " 3"}, singles()); diff != "" {
		t.Errorf("second fire mismatch (-want +got):\n%s", diff)
	}
	if got := f.rec.batches(); len(got) != 0 {
		t.Errorf("batches sent without aggregation: %v", got)
	}
}

func TestRealtimeAndCronTogether(t *testing.T) {
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)))
	req := cronReq("@hourly", "", "x")
	req.Delivery.Channels = []mcpe.Channel{"realtime", "cron"}
	sub := f.subscribe("alice", req)
	f.publishN("x", 1)
	if diff := cmp.Diff([]string{"alice " + sub.ID}, f.rec.delivered()); diff != "" {
		t.Errorf("realtime delivery mismatch (-want +got):\n%s", diff)
	}
	f.clock.Advance(time.Hour)
	if diff := cmp.Diff([]string{sub.ID[:8] + ": 1 (remaining 0)"}, f.rec.batches()); diff != "" {
		t.Errorf("digest mismatch (-want +got):\n%s", diff)
	}
}

func TestMissedFiresRunOnceAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	start := time.Date(2026, 3, 2, 8, 30, 0, 0, time.UTC)
	f, _ := newTimed(t, path, clocktest.NewFake(start))
	sub := f.subscribe("alice", cronReq("0 * * * *", "", "x"))
	f.publishN("x", 1)
	f.publishN("x", 2)
	f.stop()

	// Down from 08:30 to 13:10: the 09:00 to 13:00 fires were missed.
	f2, _ := newTimed(t, path, clocktest.NewFake(start.Add(4*time.Hour+40*time.Minute)))
	if diff := cmp.Diff([]string{sub.ID[:8] + ": 1 2 (remaining 0)"}, f2.rec.batches()); diff != "" {
		t.Errorf("digests at start-up mismatch (-want +got):\n%s", diff)
	}
	if got := f2.get(sub.ID).NextDelivery; got == nil || got.UTC != "2026-03-02T14:00:00Z" {
		t.Errorf("next delivery after catching up = %+v, want 14:00Z", got)
	}
	f2.publishN("x", 3)
	f2.clock.AdvanceTo(time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC))
	if got := f2.rec.batches(); len(got) != 2 || !strings.HasSuffix(got[1], ": 3 (remaining 0)") {
		t.Errorf("digests = %v", got)
	}
}

// fires steps the clock an hour at a time from from to to, publishing an
// event before each step so every fire carries something, and returns when
// each digest went out (its inbox entry's time).
func fires(t *testing.T, f *fixture, from, to time.Time) []string {
	f.clock.AdvanceTo(from)
	n := 0
	for now := from; now.Before(to); now = now.Add(time.Hour) {
		n++
		f.publishN("x", n)
		f.clock.AdvanceTo(now.Add(time.Hour))
	}
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	var at []string
	for _, e := range f.rec.entries {
		if e.Kind == mcpe.InboxBatch {
			at = append(at, e.CreatedAt.UTC().Format(time.RFC3339))
		}
	}
	return at
}

func TestDigestAcrossDaylightSaving(t *testing.T) {
	for _, tc := range []struct {
		name     string
		expr     string
		from, to time.Time
		want     []string
	}{
		{"spring forward, skipped time", "30 2 * * *",
			time.Date(2026, 3, 7, 12, 0, 0, 0, newYork), time.Date(2026, 3, 9, 12, 0, 0, 0, newYork),
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"fall back", "30 2 * * *",
			time.Date(2026, 10, 31, 12, 0, 0, 0, newYork), time.Date(2026, 11, 2, 12, 0, 0, 0, newYork),
			[]string{"2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z"}},
		{"fall back, repeated time", "30 1 * * *",
			time.Date(2026, 10, 31, 12, 0, 0, 0, newYork), time.Date(2026, 11, 2, 12, 0, 0, 0, newYork),
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(tc.from))
			f.subscribe("alice", cronReq(tc.expr, "America/New_York", "x"))
			if diff := cmp.Diff(tc.want, fires(t, f, tc.from, tc.to)); diff != "" {
				t.Errorf("fire times mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScheduledDeliveryExpires(t *testing.T) {
	start := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(start))
	sub := f.subscribe("alice", mcpe.SubscribeRequest{
		Filter: mcpe.Filter{EventTypes: []string{"x"}},
		Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{"scheduled"},
			ScheduledDelivery: &mcpe.ScheduledDelivery{DeliverAt: "2026-03-02T12:00:00", Timezone: "Europe/Paris"}},
	})
	if sub.NextDelivery == nil || sub.NextDelivery.UTC != "2026-03-02T11:00:00Z" || sub.NextDelivery.At != "2026-03-02T12:00:00+01:00" {
		t.Fatalf("nextDelivery = %+v", sub.NextDelivery)
	}
	f.publishN("x", 1)
	f.publishN("x", 2)
	f.clock.AdvanceTo(time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC))
	if diff := cmp.Diff([]string{sub.ID[:8] + ": 1 2 (remaining 0)"}, f.rec.batches()); diff != "" {
		t.Errorf("delivery mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"alice " + sub.ID}, f.rec.expired()); diff != "" {
		t.Errorf("expiry notices mismatch (-want +got):\n%s", diff)
	}
	if got := f.get(sub.ID); got.Status != mcpe.StatusExpired || got.NextDelivery != nil {
		t.Errorf("after delivery: %+v", got)
	}
	f.publishN("x", 3) // no longer matched
	if got := f.get(sub.ID).BufferedEvents; got != 0 {
		t.Errorf("an expired subscription buffered %d events", got)
	}
}

// TestScheduledDeliveryOfNothingSaysSo checks that a one-time delivery whose
// time comes with nothing waiting sends a digest of no events (then the
// expiry notice, with autoExpire), so the model can say that nothing came;
// events_poll returns it with "events": [].
func TestScheduledDeliveryOfNothingSaysSo(t *testing.T) {
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)))
	no := false
	expiring := f.subscribe("alice", mcpe.SubscribeRequest{
		Filter: mcpe.Filter{EventTypes: []string{"alert.critical"}},
		Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{"scheduled"},
			ScheduledDelivery: &mcpe.ScheduledDelivery{DeliverAt: "2026-03-02T09:00:00Z"}},
	})
	kept := f.subscribe("alice", mcpe.SubscribeRequest{
		Filter: mcpe.Filter{EventTypes: []string{"alert.critical"}},
		Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{"scheduled"},
			ScheduledDelivery: &mcpe.ScheduledDelivery{DeliverAt: "2026-03-02T09:00:00Z", AutoExpire: &no, AggregateEvents: &no}},
	})
	f.publishN("alert.minor", 1) // not matched
	f.clock.AdvanceTo(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))

	sorted := func(ss []string) []string { slices.Sort(ss); return ss }
	want := sorted([]string{expiring.ID[:8] + ":  (remaining 0)", kept.ID[:8] + ":  (remaining 0)"})
	if diff := cmp.Diff(want, sorted(f.rec.batches())); diff != "" {
		t.Errorf("digests mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"alice " + expiring.ID}, f.rec.expired()); diff != "" {
		t.Errorf("expiry notices mismatch (-want +got):\n%s", diff)
	}
	if got := f.get(kept.ID); got.Status != mcpe.StatusActive || got.NextDelivery != nil || got.DeliveredCount != 0 {
		t.Errorf("without autoExpire, after the delivery: status %s, next %+v, delivered %d", got.Status, got.NextDelivery, got.DeliveredCount)
	}
	// Nothing more is sent later.
	f.clock.Advance(48 * time.Hour)
	if got := f.rec.batches(); len(got) != 2 {
		t.Errorf("digests after two more days: %v", got)
	}

	res, err := f.svc.Poll(context.Background(), "alice", mcpe.PollRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, it := range res.Items {
		b, _ := json.Marshal(it)
		if it.Kind == mcpe.InboxBatch && !strings.Contains(string(b), `"events":[]`) {
			t.Errorf("events_poll item of an empty digest = %s, want \"events\":[]", b)
		}
		kinds = append(kinds, string(it.Kind))
	}
	if diff := cmp.Diff([]string{"batch", "batch", "subscription_expired"}, sorted(kinds)); diff != "" {
		t.Errorf("events_poll kinds mismatch (-want +got):\n%s", diff)
	}
}

func TestScheduledDeliveryPassedWhileDown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	start := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	f, _ := newTimed(t, path, clocktest.NewFake(start))
	sub := f.subscribe("alice", mcpe.SubscribeRequest{
		Filter: mcpe.Filter{EventTypes: []string{"x"}},
		Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{"scheduled"},
			ScheduledDelivery: &mcpe.ScheduledDelivery{DeliverAt: "2026-03-02T09:00:00Z"}},
	})
	f.publishN("x", 7)
	f.stop()
	f2, _ := newTimed(t, path, clocktest.NewFake(start.Add(3*time.Hour)))
	if diff := cmp.Diff([]string{sub.ID[:8] + ": 7 (remaining 0)"}, f2.rec.batches()); diff != "" {
		t.Errorf("delivery at start-up mismatch (-want +got):\n%s", diff)
	}
	if got := f2.get(sub.ID).Status; got != mcpe.StatusExpired {
		t.Errorf("status = %s, want expired", got)
	}
}

func TestPausedDigestNeitherCollectsNorFires(t *testing.T) {
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 30, 0, 0, time.UTC)))
	sub := f.subscribe("alice", cronReq("0 * * * *", "", "x"))
	f.publishN("x", 1)
	if _, err := f.svc.Pause(context.Background(), "alice", sub.ID); err != nil {
		t.Fatal(err)
	}
	f.publishN("x", 2) // not collected
	f.clock.Advance(time.Hour)
	if got := f.rec.batches(); len(got) != 0 {
		t.Fatalf("a paused digest fired: %v", got)
	}
	resumed, err := f.svc.Resume(context.Background(), "alice", sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.NextDelivery == nil || resumed.NextDelivery.UTC != "2026-03-02T10:00:00Z" {
		t.Errorf("next delivery after resume = %+v", resumed.NextDelivery)
	}
	f.publishN("x", 3)
	f.clock.Advance(time.Hour)
	if diff := cmp.Diff([]string{sub.ID[:8] + ": 1 3 (remaining 0)"}, f.rec.batches()); diff != "" {
		t.Errorf("digest mismatch (-want +got):\n%s", diff)
	}
}

func TestUpdatingTheScheduleKeepsTheBuffer(t *testing.T) {
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)))
	sub := f.subscribe("alice", cronReq("0 9 * * *", "", "x"))
	f.publishN("x", 1)
	f.publishN("x", 2)
	d := *sub.Delivery.CronSchedule
	d.Expression = "0 12 * * *"
	got, err := f.svc.Update(context.Background(), "alice", mcpe.UpdateRequest{
		SubscriptionID: sub.ID,
		Delivery:       &mcpe.Delivery{Channels: []mcpe.Channel{"cron"}, CronSchedule: &d},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.NextDelivery.UTC != "2026-03-02T12:00:00Z" || got.BufferedEvents != 2 {
		t.Errorf("after the update: next %+v, buffered %d", got.NextDelivery, got.BufferedEvents)
	}
	f.clock.AdvanceTo(time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC))
	if len(f.rec.batches()) != 0 {
		t.Fatal("fired at the old time")
	}
	f.clock.AdvanceTo(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC))
	if diff := cmp.Diff([]string{sub.ID[:8] + ": 1 2 (remaining 0)"}, f.rec.batches()); diff != "" {
		t.Errorf("digest mismatch (-want +got):\n%s", diff)
	}
}

func TestLeavingCronDeliversWhatWaits(t *testing.T) {
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)))
	sub := f.subscribe("alice", cronReq("0 9 * * *", "", "x"))
	f.publishN("x", 1)
	got, err := f.svc.Update(context.Background(), "alice", mcpe.UpdateRequest{
		SubscriptionID: sub.ID, Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{"realtime"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{sub.ID[:8] + ": 1 (remaining 0)"}, f.rec.batches()); diff != "" {
		t.Errorf("flush mismatch (-want +got):\n%s", diff)
	}
	if got.NextDelivery != nil || got.BufferedEvents != 0 {
		t.Errorf("after leaving cron: %+v", got)
	}
	f.publishN("x", 2)
	if n := len(f.rec.delivered()); n != 1 {
		t.Errorf("realtime deliveries after the change = %d, want 1", n)
	}
}

func TestExpiryDeliversWhatWaits(t *testing.T) {
	start := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(start))
	req := cronReq("0 9 * * *", "", "x")
	req.ExpiresAt = start.Add(30 * time.Minute).Format(time.RFC3339)
	sub := f.subscribe("alice", req)
	f.publishN("x", 1)
	f.clock.Advance(30 * time.Minute)
	if diff := cmp.Diff([]string{sub.ID[:8] + ": 1 (remaining 0)"}, f.rec.batches()); diff != "" {
		t.Errorf("final digest mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"alice " + sub.ID}, f.rec.expired()); diff != "" {
		t.Errorf("expiry mismatch (-want +got):\n%s", diff)
	}
	f.clock.Advance(time.Hour) // no fire for the expired subscription
	if n := len(f.rec.batches()); n != 1 {
		t.Errorf("%d digests, want 1", n)
	}
}

// TestDigestsAreKeptUntilSent checks that every digest is handed over
// marked pending and stays so in the store (for the owner's next live
// session, delivery/realtime) until a session was sent it.
func TestDigestsAreKeptUntilSent(t *testing.T) {
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 30, 0, 0, time.UTC)))
	sub := f.subscribe("alice", cronReq("0 * * * *", "", "x"))
	for hour := 1; hour <= 3; hour++ {
		f.publishN("x", hour)
		f.clock.Advance(time.Hour)
	}
	id := sub.ID[:8]
	want := []string{id + ": 1 (remaining 0)", id + ": 2 (remaining 0)", id + ": 3 (remaining 0)"}
	if diff := cmp.Diff(want, f.rec.batches()); diff != "" {
		t.Errorf("digests mismatch (-want +got):\n%s", diff)
	}
	kept, err := f.store.PendingEntries(context.Background(), "alice", 10)
	if err != nil || len(kept) != 3 {
		t.Fatalf("kept digests = %d, %v; want 3", len(kept), err)
	}
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	for i, e := range f.rec.entries {
		if !e.Pending || e.Seq != kept[i].Seq {
			t.Errorf("digest %d handed over as %+v; want it pending, at %d", i, e, kept[i].Seq)
		}
	}
}

func TestTimedDeliveryErrors(t *testing.T) {
	start := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(start))
	filter := mcpe.Filter{EventTypes: []string{"x"}}
	cs := &mcpe.CronSchedule{Expression: "0 9 * * *"}
	sd := &mcpe.ScheduledDelivery{DeliverAt: "2026-03-02T09:00:00Z"}
	for _, tc := range []struct {
		name string
		d    mcpe.Delivery
		want string
	}{
		{"cron without schedule", mcpe.Delivery{Channels: []mcpe.Channel{"cron"}},
			`delivery.cronSchedule: is required with the "cron" channel`},
		{"schedule without cron", mcpe.Delivery{Channels: []mcpe.Channel{"realtime"}, CronSchedule: cs},
			`delivery.cronSchedule: is given but delivery.channels does not include "cron"`},
		{"cron and scheduled", mcpe.Delivery{Channels: []mcpe.Channel{"cron", "scheduled"}, CronSchedule: cs, ScheduledDelivery: sd},
			`"cron" and "scheduled" cannot be combined in one subscription`},
		{"scheduled without deliverAt object", mcpe.Delivery{Channels: []mcpe.Channel{"scheduled"}},
			`delivery.scheduledDelivery: is required with the "scheduled" channel`},
		{"bad zone", mcpe.Delivery{Channels: []mcpe.Channel{"cron"}, CronSchedule: &mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "EST5"}},
			`delivery.cronSchedule.timezone: "EST5" is not an IANA time zone`},
		{"every too short", mcpe.Delivery{Channels: []mcpe.Channel{"cron"}, CronSchedule: &mcpe.CronSchedule{Expression: "@every 10s"}},
			`delivery.cronSchedule.expression: "@every 10s" fires more often than this server allows; use an interval of at least 1m0s`},
		{"deliverAt past", mcpe.Delivery{Channels: []mcpe.Channel{"scheduled"}, ScheduledDelivery: &mcpe.ScheduledDelivery{DeliverAt: "2026-03-01T09:00:00Z"}},
			`delivery.scheduledDelivery.deliverAt: 2026-03-01T09:00:00Z is in the past`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.d
			_, err := f.svc.Subscribe(context.Background(), "alice", mcpe.SubscribeRequest{Filter: filter, Delivery: &d})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestExpiryIsKeptForTheOwner checks that an expiry notice, like a digest,
// is kept for the owner's next live session, whether the subscription
// expired while the server ran or while it was down.
func TestExpiryIsKeptForTheOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	start := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	f, _ := newTimed(t, path, clocktest.NewFake(start))
	expiring := func(in time.Duration) *subscriptions.Subscription {
		req := every("x")
		req.ExpiresAt = start.Add(in).Format(time.RFC3339)
		return f.subscribe("alice", req)
	}
	running, down := expiring(time.Hour), expiring(3*time.Hour)
	f.clock.Advance(time.Hour)
	kept := func(f *fixture) []string {
		t.Helper()
		es, err := f.store.PendingEntries(context.Background(), "alice", 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.SubscriptionIDs[0])
		}
		return out
	}
	if diff := cmp.Diff([]string{"alice " + running.ID}, f.rec.expired()); diff != "" {
		t.Errorf("notices mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{running.ID}, kept(f)); diff != "" {
		t.Errorf("kept mismatch (-want +got):\n%s", diff)
	}
	f.stop()

	// Down while the second one expired: it expires at start-up.
	f2, _ := newTimed(t, path, clocktest.NewFake(start.Add(4*time.Hour)))
	if diff := cmp.Diff([]string{"alice " + down.ID}, f2.rec.expired()); diff != "" {
		t.Errorf("notices at start-up mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{running.ID, down.ID}, kept(f2)); diff != "" {
		t.Errorf("kept after the restart mismatch (-want +got):\n%s", diff)
	}
}
