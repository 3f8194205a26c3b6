package storetest

import (
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// testDueFires checks DueFires and NextFire: per channel, active
// subscriptions only, earliest first then by ID, bounded by the limit, and
// following the next fire Fire and UpdateSubscription record.
func testDueFires(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	a, b, c := cronSub(1, "alice"), cronSub(2, "bob"), cronSub(3, "alice")
	a.NextFireAt, b.NextFireAt, c.NextFireAt = new(at(time.Hour)), new(at(time.Hour)), new(at(30*time.Minute))
	paused := withStatus(cronSub(4, "alice"), mcpe.StatusPaused)
	paused.NextFireAt = new(at(time.Minute))
	later, sched, plain := cronSub(5, "alice"), scheduledSub(6, "alice"), newSub(7, "alice")
	create(t, s, a, b, c, paused, later, sched, plain)

	due := func(ch mcpe.Channel, now time.Time, limit int) []string {
		t.Helper()
		got, err := s.DueFires(ctx, ch, now, limit)
		if err != nil {
			t.Fatalf("DueFires(%s, %v, %d): %v", ch, now, limit, err)
		}
		var ids []string
		for _, d := range got {
			ids = append(ids, d.SubscriptionID)
			if d.Delivery.Timed() != ch || d.Principal == "" {
				t.Errorf("DueFires(%s) returned %+v", ch, d)
			}
		}
		return ids
	}
	next := func(ch mcpe.Channel) *time.Time {
		t.Helper()
		n, ok, err := s.NextFire(ctx, ch)
		if err != nil {
			t.Fatalf("NextFire(%s): %v", ch, err)
		}
		if !ok {
			return nil
		}
		return &n
	}
	diff(t, "DueFires before any is due", []string(nil), due(mcpe.ChannelCron, at(0), 10))
	diff(t, "DueFires cron at +1h", []string{c.ID, a.ID, b.ID}, due(mcpe.ChannelCron, at(time.Hour), 10))
	diff(t, "DueFires limited", []string{c.ID, a.ID}, due(mcpe.ChannelCron, at(time.Hour), 2))
	diff(t, "DueFires scheduled at +1h", []string(nil), due(mcpe.ChannelScheduled, at(time.Hour), 10))
	diff(t, "DueFires scheduled at +2d", []string{sched.ID}, due(mcpe.ChannelScheduled, at(48*time.Hour), 10))
	diff(t, "NextFire cron", new(at(30*time.Minute)), next(mcpe.ChannelCron))
	diff(t, "NextFire scheduled", new(at(48*time.Hour)), next(mcpe.ChannelScheduled))

	// A fire records the next one; without a next, none is left.
	fire(t, s, []subscriptions.FireRequest{
		{SubscriptionID: c.ID, Principal: c.Principal, Max: 10, Aggregate: true, Next: new(at(3 * time.Hour))},
		{SubscriptionID: sched.ID, Principal: sched.Principal, Max: 10, Aggregate: true},
	}, at(time.Hour))
	diff(t, "DueFires cron after a fire", []string{a.ID, b.ID}, due(mcpe.ChannelCron, at(time.Hour), 10))
	diff(t, "NextFire scheduled after its fire", (*time.Time)(nil), next(mcpe.ChannelScheduled))

	// An update moves a subscription between channels and times.
	a.Delivery, a.NextFireAt = mcpe.DefaultDelivery(), nil
	b.NextFireAt = new(at(5 * time.Hour))
	for _, sub := range []*subscriptions.Subscription{a, b} {
		if err := s.UpdateSubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
	}
	diff(t, "DueFires cron after updates", []string(nil), due(mcpe.ChannelCron, at(time.Hour), 10))
	diff(t, "NextFire cron after updates", new(at(3*time.Hour)), next(mcpe.ChannelCron))
}
