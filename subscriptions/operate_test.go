package subscriptions_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

func TestFireNow(t *testing.T) {
	ctx := context.Background()
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 0, 0, 0, newYork)))
	sub := f.subscribe("alice", cronReq("0 9 * * *", "America/New_York", "gh.*"))
	rt := f.subscribe("alice", every("gh.*"))
	for n := 1; n <= 2; n++ {
		f.publishN("gh.issue", n)
	}
	got, err := f.svc.FireNow(ctx, "alice", sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{sub.ID[:8] + ": 1 2 (remaining 0)"}, f.rec.batches()); diff != "" {
		t.Errorf("digest mismatch (-want +got):\n%s", diff)
	}
	if got.BufferedEvents != 0 || got.DeliveredCount != 2 || got.NextDelivery == nil || got.NextDelivery.UTC != "2026-03-02T14:00:00Z" {
		t.Errorf("after FireNow: buffered %d, delivered %d, next %+v", got.BufferedEvents, got.DeliveredCount, got.NextDelivery)
	}
	// The scheduled fire still comes, with nothing left to send.
	f.clock.AdvanceTo(time.Date(2026, 3, 2, 9, 0, 0, 0, newYork))
	if n := len(f.rec.batches()); n != 1 {
		t.Errorf("%d digests after the scheduled fire, want 1", n)
	}

	for _, tc := range []struct {
		name, principal, id string
		want                error
	}{
		{"another principal's", "bob", sub.ID, subscriptions.ErrNotFound},
		{"unknown", "alice", "nope", subscriptions.ErrNotFound},
		{"realtime", "alice", rt.ID, errInvalid},
	} {
		if _, err := f.svc.FireNow(ctx, tc.principal, tc.id); !isErr(err, tc.want) {
			t.Errorf("FireNow of %s subscription: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := f.svc.Pause(ctx, "alice", sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.FireNow(ctx, "alice", sub.ID); !isErr(err, errInvalid) {
		t.Errorf("FireNow of a paused subscription: %v, want invalid", err)
	}
}

func TestFireNowBeforeAOneTimeDelivery(t *testing.T) {
	ctx := context.Background()
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(svcStart))
	sub := f.subscribe("alice", mcpe.SubscribeRequest{
		Filter:   mcpe.Filter{EventTypes: []string{"gh.*"}},
		Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelScheduled}, ScheduledDelivery: &mcpe.ScheduledDelivery{DeliverAt: svcStart.Add(time.Hour).Format(time.RFC3339)}},
	})
	f.publishN("gh.issue", 7)
	got, err := f.svc.FireNow(ctx, "alice", sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != mcpe.StatusActive || got.DeliveredCount != 1 || got.NextDelivery == nil {
		t.Errorf("after FireNow: status %s, delivered %d, next %v; want active, 1, deliverAt", got.Status, got.DeliveredCount, got.NextDelivery)
	}
	// At deliverAt it fires (nothing left) and expires, as it would have.
	f.clock.AdvanceTo(svcStart.Add(time.Hour))
	if got := f.get(sub.ID); got.Status != mcpe.StatusExpired {
		t.Errorf("after deliverAt: status %s, want expired", got.Status)
	}
}

func TestReplay(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	a := f.subscribe("alice", every("gh.*"))
	other := f.subscribe("alice", every("slack.*"))
	b := f.subscribe("bob", every("gh.*"))
	res := f.publish("gh.push")
	before := f.rec.delivered()

	if err := f.svc.Replay(ctx, "alice", a.ID, res.EventID); err != nil {
		t.Fatal(err)
	}
	got := f.rec.delivered()[len(before):]
	if diff := cmp.Diff([]string{"alice " + a.ID}, got); diff != "" {
		t.Errorf("replayed mismatch (-want +got):\n%s", diff)
	}
	if n := f.get(a.ID).DeliveredCount; n != 1 {
		t.Errorf("deliveredCount after a replay = %d, want 1 (a replay is not a delivery)", n)
	}

	for _, tc := range []struct {
		name, principal, sub, event string
		want                        error
	}{
		{"to another principal's subscription", "alice", b.ID, res.EventID, subscriptions.ErrNotFound},
		{"of an event not in the inbox", "alice", a.ID, "00000000-0000-0000-0000-000000000000", errInvalid},
		{"to a subscription that does not match", "alice", other.ID, res.EventID, errInvalid},
		{"of an empty event ID", "alice", a.ID, "", errInvalid},
	} {
		if err := f.svc.Replay(ctx, tc.principal, tc.sub, tc.event); !isErr(err, tc.want) {
			t.Errorf("Replay %s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := f.svc.Pause(ctx, "alice", a.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Replay(ctx, "alice", a.ID, res.EventID); !isErr(err, errInvalid) {
		t.Errorf("Replay to a paused subscription: %v, want invalid", err)
	}
}

func TestReplayNeedsALiveSession(t *testing.T) {
	p := &presence{}
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{Presence: p})
	a := f.subscribe("alice", every("gh.*"))
	res := f.publish("gh.push")
	p.away.Store(true)
	if err := f.svc.Replay(context.Background(), "alice", a.ID, res.EventID); !errors.Is(err, subscriptions.ErrNoLiveSession) {
		t.Errorf("Replay with no live session: %v, want ErrNoLiveSession", err)
	}
}

// errInvalid stands for any *mcpe.InvalidError in isErr.
var errInvalid = errors.New("invalid input")

// isErr reports whether err is want, or an *mcpe.InvalidError for
// errInvalid.
func isErr(err, want error) bool {
	if want == errInvalid {
		var ie *mcpe.InvalidError
		return errors.As(err, &ie)
	}
	return errors.Is(err, want)
}

// deepInbox is a store whose principals' inboxes begin with filler
// entries: filler of them, before what the store holds.
type deepInbox struct {
	subscriptions.Store
	filler int
}

func (d *deepInbox) all(ctx context.Context, principal string) ([]subscriptions.InboxEntry, error) {
	out := make([]subscriptions.InboxEntry, 0, d.filler)
	for i := range d.filler {
		out = append(out, subscriptions.InboxEntry{Seq: int64(i + 1), Principal: principal, Kind: mcpe.InboxEvent, SubscriptionIDs: []string{"filler"}})
	}
	for after := int64(0); ; {
		entries, more, err := d.Store.ReadInbox(ctx, principal, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			after = e.Seq
			e.Seq += int64(d.filler)
			out = append(out, e)
		}
		if !more {
			return out, nil
		}
	}
}

func (d *deepInbox) ReadInbox(ctx context.Context, principal string, after int64, limit int) ([]subscriptions.InboxEntry, bool, error) {
	all, err := d.all(ctx, principal)
	if err != nil {
		return nil, false, err
	}
	var out []subscriptions.InboxEntry
	for _, e := range all {
		if e.Seq > after {
			out = append(out, e)
		}
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

func (d *deepInbox) LatestInbox(ctx context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error) {
	all, err := d.all(ctx, principal)
	if err != nil {
		return nil, err
	}
	return all[max(0, len(all)-limit):], nil
}

// TestReplayFindsTheNewestInALongInbox replays the newest event of an
// inbox far longer than what Replay reads: it reads the newest entries, not
// the oldest.
func TestReplayFindsTheNewestInALongInbox(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, subscriptionsMemory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rec := &recorder{}
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{
		Store: &deepInbox{Store: store, filler: 120_000}, Clock: clocktest.NewFake(svcStart), Deliverer: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	sub, err := svc.Subscribe(ctx, "alice", every("gh.*"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Publish(ctx, mcpe.Event{Type: "gh.push", Data: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Replay(ctx, "alice", sub.ID, res.EventID); err != nil {
		t.Fatalf("Replay of the newest event: %v", err)
	}
	if head, err := svc.InboxHead(ctx, "alice"); err != nil || head != 120_001 {
		t.Errorf("InboxHead = %d, %v; want 120001", head, err)
	}
}

// TestReplayRefusesTimed checks that an event is not replayed to a cron or
// scheduled subscription, even one whose filter matches it.
func TestReplayRefusesTimed(t *testing.T) {
	ctx := context.Background()
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 0, 0, 0, newYork)))
	cron := f.subscribe("alice", cronReq("0 9 * * *", "America/New_York", "gh.*"))
	f.subscribe("alice", every("gh.*"))
	res := f.publish("gh.push")
	before := len(f.rec.delivered())
	err := f.svc.Replay(ctx, "alice", cron.ID, res.EventID)
	if !isErr(err, errInvalid) || !strings.Contains(err.Error(), "digests") {
		t.Errorf("Replay to a cron subscription: %v, want invalid, naming digests", err)
	}
	if n := len(f.rec.delivered()) - before; n != 0 {
		t.Errorf("%d entries replayed to a cron subscription", n)
	}
}

// pausingPresence pauses the subscription (in another goroutine) when
// Replay asks whether its owner is connected, which it does between its
// check of the subscription and its send, and reports whether the pause
// got through before Connected returned.
type pausingPresence struct {
	svc      *subscriptions.Service
	id       string
	paused   chan struct{}
	slipped  atomic.Bool
	disarmed atomic.Bool
}

func (p *pausingPresence) Connected(principal string) bool {
	if p.disarmed.Swap(true) {
		return true
	}
	go func() {
		p.svc.Pause(context.Background(), principal, p.id)
		close(p.paused)
	}()
	select {
	case <-p.paused:
		p.slipped.Store(true)
	case <-time.After(100 * time.Millisecond):
	}
	return true
}

// TestReplayHoldsOffAPause checks that a pause cannot come between
// Replay's check that the subscription is active and its send.
func TestReplayHoldsOffAPause(t *testing.T) {
	p := &pausingPresence{paused: make(chan struct{})}
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{Presence: p})
	p.svc = f.svc
	a := f.subscribe("alice", every("gh.*"))
	p.id = a.ID
	res := f.publish("gh.push")
	if err := f.svc.Replay(context.Background(), "alice", a.ID, res.EventID); err != nil {
		t.Fatal(err)
	}
	<-p.paused
	if p.slipped.Load() {
		t.Error("a pause went through between Replay's check of the subscription and its send")
	}
	if got := f.get(a.ID).Status; got != mcpe.StatusPaused {
		t.Errorf("status after the pause = %s, want paused", got)
	}
}
