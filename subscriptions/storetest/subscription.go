package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// testSubscriptionRoundTrip checks that what CreateSubscription stores,
// GetSubscription and ListSubscriptions return unchanged.
func testSubscriptionRoundTrip(t *testing.T, open Opener) {
	tests := []struct {
		name string
		sub  *subscriptions.Subscription
	}{
		{"minimal", newSub(1, "alice")},
		{"everything set", &subscriptions.Subscription{
			Principal: "alice",
			Subscription: mcpe.Subscription{
				ID:     subID(2),
				Label:  `PRs "merged" in acme/api ✓`,
				Status: mcpe.StatusActive,
				Filter: mcpe.Filter{
					EventTypes: []string{"github.issue.*", "test.created"},
					Tags:       []string{"frontend", "urgent"},
					Priority:   []mcpe.Priority{mcpe.PriorityHigh, mcpe.PriorityCritical},
				},
				Delivery: mcpe.Delivery{Channels: []mcpe.Channel{
					mcpe.ChannelCron, mcpe.ChannelRealtime, mcpe.ChannelScheduled,
				}, Fields: []string{"issue.title"}, MaxEventBytes: 700},
				CreatedAt:       at(time.Minute + 123*time.Millisecond),
				UpdatedAt:       at(time.Hour + 456*time.Millisecond),
				ExpiresAt:       new(at(72*time.Hour + 789*time.Millisecond)),
				DeliveredCount:  42,
				LastDeliveredAt: new(at(90*time.Minute + 1*time.Millisecond)),
			},
		}},
		{"tags only", &subscriptions.Subscription{
			Principal: "alice",
			Subscription: mcpe.Subscription{
				ID:        subID(3),
				Status:    mcpe.StatusActive,
				Filter:    mcpe.Filter{Tags: []string{"deploy"}},
				Delivery:  mcpe.DefaultDelivery(),
				CreatedAt: t0,
				UpdatedAt: t0,
			},
		}},
		{"priority only", &subscriptions.Subscription{
			Principal: "alice",
			Subscription: mcpe.Subscription{
				ID:        subID(4),
				Status:    mcpe.StatusActive,
				Filter:    mcpe.Filter{Priority: []mcpe.Priority{mcpe.PriorityLow}},
				Delivery:  mcpe.DefaultDelivery(),
				CreatedAt: t0,
				UpdatedAt: t0,
			},
		}},
		{"paused", withStatus(newSub(5, "alice"), mcpe.StatusPaused)},
		{"expired", withExpiry(withStatus(newSub(6, "alice"), mcpe.StatusExpired), t0)},
		{"expiry without deliveries", withExpiry(newSub(7, "alice"), at(24*time.Hour))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			if err := s.CreateSubscription(t.Context(), tt.sub.Clone(), noLimit); err != nil {
				t.Fatalf("CreateSubscription: %v", err)
			}
			diff(t, "GetSubscription", tt.sub, get(t, s, "alice", tt.sub.ID))
			diff(t, "ListSubscriptions", []*subscriptions.Subscription{tt.sub}, list(t, s, subscriptions.ListQuery{Principal: "alice"}))
		})
	}
}

func testGetMissing(t *testing.T, open Opener) {
	s := open(t)
	_, err := s.GetSubscription(t.Context(), "alice", subID(1))
	checkNotFound(t, "GetSubscription of a subscription never created", err)
}

// testCreateLimit checks that only the principal's own active and paused
// subscriptions count towards the limit.
func testCreateLimit(t *testing.T, open Opener) {
	const max = 2
	tests := []struct {
		name      string
		existing  []*subscriptions.Subscription
		wantLimit bool
	}{
		{"none", nil, false},
		{"under the limit", []*subscriptions.Subscription{newSub(1, "alice")}, false},
		{"active at the limit", []*subscriptions.Subscription{newSub(1, "alice"), newSub(2, "alice")}, true},
		{"paused count", []*subscriptions.Subscription{
			withStatus(newSub(1, "alice"), mcpe.StatusPaused),
			withStatus(newSub(2, "alice"), mcpe.StatusPaused),
		}, true},
		{"expired do not count", []*subscriptions.Subscription{
			withStatus(newSub(1, "alice"), mcpe.StatusExpired),
			withStatus(newSub(2, "alice"), mcpe.StatusExpired),
			newSub(3, "alice"),
		}, false},
		{"other principals do not count", []*subscriptions.Subscription{
			newSub(1, "bob"), newSub(2, "bob"), newSub(3, "carol"), newSub(4, "alice"),
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			create(t, s, tt.existing...)
			sub := newSub(10, "alice")
			err := s.CreateSubscription(t.Context(), sub.Clone(), max)
			if !tt.wantLimit {
				if err != nil {
					t.Fatalf("CreateSubscription: %v, want success", err)
				}
				diff(t, "GetSubscription", sub, get(t, s, "alice", sub.ID))
				return
			}
			checkLimitError(t, err, max)
			_, err = s.GetSubscription(t.Context(), "alice", sub.ID)
			checkNotFound(t, "GetSubscription of the refused subscription", err)
		})
	}
}

// testCreateLimitAfterExpiryAndDelete checks that subscriptions expired by
// ExpireSubscriptions or deleted free their place.
func testCreateLimitAfterExpiryAndDelete(t *testing.T, open Opener) {
	const max = 2
	s := open(t)
	expiring := withExpiry(newSub(1, "alice"), at(time.Hour))
	deleted := newSub(2, "alice")
	for _, sub := range []*subscriptions.Subscription{expiring, deleted} {
		if err := s.CreateSubscription(t.Context(), sub.Clone(), max); err != nil {
			t.Fatalf("CreateSubscription(%s): %v", sub.ID, err)
		}
	}
	checkLimitError(t, s.CreateSubscription(t.Context(), newSub(3, "alice"), max), max)

	expire(t, s, at(time.Hour))
	if err := s.CreateSubscription(t.Context(), newSub(3, "alice"), max); err != nil {
		t.Fatalf("CreateSubscription after one expired: %v", err)
	}
	// The expired one made room: a principal keeps at most max in all.
	if _, err := s.GetSubscription(t.Context(), "alice", expiring.ID); !errors.Is(err, subscriptions.ErrNotFound) {
		t.Errorf("the expired subscription is still kept (%v) beside max others", err)
	}
	checkLimitError(t, s.CreateSubscription(t.Context(), newSub(4, "alice"), max), max)

	if err := s.DeleteSubscription(t.Context(), "alice", deleted.ID); err != nil {
		t.Fatalf("DeleteSubscription: %v", err)
	}
	if err := s.CreateSubscription(t.Context(), newSub(4, "alice"), max); err != nil {
		t.Fatalf("CreateSubscription after one was deleted: %v", err)
	}
}

func checkLimitError(t *testing.T, err error, max int) {
	t.Helper()
	if !errors.Is(err, subscriptions.ErrLimitReached) {
		t.Fatalf("CreateSubscription over the limit: error %v, want ErrLimitReached", err)
	}
	var le *subscriptions.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("CreateSubscription over the limit: error %T, want a *LimitError", err)
	}
	if le.Max != max {
		t.Errorf("LimitError.Max = %d, want %d", le.Max, max)
	}
}

// testUpdateSubscription checks that UpdateSubscription stores exactly the
// status, filter, delivery, updatedAt and expiresAt.
func testUpdateSubscription(t *testing.T, open Opener) {
	tests := []struct {
		name  string
		start mcpe.Status
		edit  func(*subscriptions.Subscription)
	}{
		{"pause", mcpe.StatusActive, func(s *subscriptions.Subscription) { s.Status = mcpe.StatusPaused }},
		{"resume", mcpe.StatusPaused, func(s *subscriptions.Subscription) { s.Status = mcpe.StatusActive }},
		{"expire", mcpe.StatusActive, func(s *subscriptions.Subscription) { s.Status = mcpe.StatusExpired }},
		{"filter", mcpe.StatusActive, func(s *subscriptions.Subscription) {
			s.Filter = mcpe.Filter{
				Tags:     []string{"backend"},
				Priority: []mcpe.Priority{mcpe.PriorityHigh, mcpe.PriorityCritical},
			}
		}},
		{"delivery", mcpe.StatusActive, func(s *subscriptions.Subscription) {
			s.Delivery = mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelScheduled, mcpe.ChannelRealtime}}
		}},
		{"move expiresAt", mcpe.StatusActive, func(s *subscriptions.Subscription) { s.ExpiresAt = new(at(48 * time.Hour)) }},
		{"clear expiresAt", mcpe.StatusActive, func(s *subscriptions.Subscription) { s.ExpiresAt = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			orig := withExpiry(withStatus(newSub(1, "alice"), tt.start), at(24*time.Hour))
			orig.DeliveredCount = 3
			orig.LastDeliveredAt = new(at(2 * time.Minute))
			create(t, s, orig)

			want := orig.Clone()
			tt.edit(want)
			want.UpdatedAt = at(time.Hour)
			// The fields UpdateSubscription does not store change too;
			// they must keep their stored values.
			arg := want.Clone()
			arg.CreatedAt = at(99 * time.Hour)
			arg.DeliveredCount = 99
			arg.LastDeliveredAt = nil
			update(t, s, arg)

			diff(t, "GetSubscription", want, get(t, s, "alice", orig.ID))
		})
	}

	t.Run("missing", func(t *testing.T) {
		s := open(t)
		err := s.UpdateSubscription(t.Context(), newSub(1, "alice"))
		checkNotFound(t, "UpdateSubscription of a subscription never created", err)
		diff(t, "ListSubscriptions", []*subscriptions.Subscription(nil), list(t, s, subscriptions.ListQuery{}))
	})
}

// testDeleteSubscription checks that DeleteSubscription removes the
// subscription and nothing else: what it delivered stays in the inbox.
func testDeleteSubscription(t *testing.T, open Opener) {
	s := open(t)
	gone, kept := newSub(1, "alice"), newSub(2, "alice")
	create(t, s, gone, kept)
	ev, raw := newEvent(1, "test.created", "")
	res := publish(t, s, ev, raw, targets(gone, kept), at(time.Hour))
	if err := s.DeleteSubscription(t.Context(), "alice", gone.ID); err != nil {
		t.Fatalf("DeleteSubscription: %v", err)
	}

	_, err := s.GetSubscription(t.Context(), "alice", gone.ID)
	checkNotFound(t, "GetSubscription of a deleted subscription", err)
	diff(t, "ListSubscriptions", []*subscriptions.Subscription{get(t, s, "alice", kept.ID)}, list(t, s, subscriptions.ListQuery{}))
	diff(t, "inbox", []subscriptions.InboxEntry{entry(seqOf(t, res, gone), raw, at(time.Hour), gone, kept)}, inbox(t, s, "alice"))

	checkNotFound(t, "second DeleteSubscription", s.DeleteSubscription(t.Context(), "alice", gone.ID))
	checkNotFound(t, "UpdateSubscription of a deleted subscription", s.UpdateSubscription(t.Context(), gone))

	// Counting ignores what the deleted subscription delivered.
	diff(t, "kept's counts", delivery{1, new(at(time.Hour))}, deliveryOf(t, s, kept))
}

// testListSubscriptions checks ListSubscriptions' filters and order.
func testListSubscriptions(t *testing.T, open Opener) {
	s := open(t)
	subs := map[int]*subscriptions.Subscription{
		1: withStatus(newSub(1, "alice"), mcpe.StatusPaused),
		2: newSub(2, "alice"),
		3: newSub(3, "alice"),
		4: newSub(4, "bob"),
		5: withStatus(newSub(5, "alice"), mcpe.StatusExpired),
		6: withStatus(newSub(6, "bob"), mcpe.StatusPaused),
	}
	// Neither the order of insertion nor that of the IDs is the order of
	// age.
	for _, n := range []int{3, 6, 1, 5, 2, 4} {
		subs[n].ID = subID(100 - n)
		create(t, s, subs[n])
	}
	tests := []struct {
		name string
		q    subscriptions.ListQuery
		want []int
	}{
		{"everything", subscriptions.ListQuery{}, []int{1, 2, 3, 4, 5, 6}},
		{"one principal", subscriptions.ListQuery{Principal: "alice"}, []int{1, 2, 3, 5}},
		{"other principal", subscriptions.ListQuery{Principal: "bob"}, []int{4, 6}},
		{"unknown principal", subscriptions.ListQuery{Principal: "carol"}, nil},
		{"active", subscriptions.ListQuery{Status: mcpe.StatusActive}, []int{2, 3, 4}},
		{"paused", subscriptions.ListQuery{Status: mcpe.StatusPaused}, []int{1, 6}},
		{"expired", subscriptions.ListQuery{Status: mcpe.StatusExpired}, []int{5}},
		{"principal and status", subscriptions.ListQuery{Principal: "alice", Status: mcpe.StatusActive}, []int{2, 3}},
		{"principal without that status", subscriptions.ListQuery{Principal: "bob", Status: mcpe.StatusExpired}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []*subscriptions.Subscription
			for _, n := range tt.want {
				want = append(want, subs[n])
			}
			diff(t, "ListSubscriptions", want, list(t, s, tt.q))
		})
	}
}

// testPrincipalIsolation checks that one principal can neither see nor
// change another's subscriptions and inbox.
func testPrincipalIsolation(t *testing.T, open Opener) {
	s := open(t)
	alices := newSub(1, "alice")
	create(t, s, alices)
	ev, raw := newEvent(1, "test.created", "")
	res := publish(t, s, ev, raw, targets(alices), at(time.Hour))
	aliceInbox := []subscriptions.InboxEntry{entry(seqOf(t, res, alices), raw, at(time.Hour), alices)}
	want := get(t, s, "alice", alices.ID)

	_, err := s.GetSubscription(t.Context(), "bob", alices.ID)
	checkNotFound(t, "GetSubscription by another principal", err)

	stolen := withStatus(want.Clone(), mcpe.StatusPaused)
	stolen.Principal = "bob"
	stolen.UpdatedAt = at(2 * time.Hour)
	checkNotFound(t, "UpdateSubscription by another principal", s.UpdateSubscription(t.Context(), stolen))
	checkNotFound(t, "DeleteSubscription by another principal", s.DeleteSubscription(t.Context(), "bob", alices.ID))

	diff(t, "ListSubscriptions of the other principal", []*subscriptions.Subscription(nil), list(t, s, subscriptions.ListQuery{Principal: "bob"}))
	diff(t, "inbox of the other principal", []subscriptions.InboxEntry(nil), inbox(t, s, "bob"))
	diff(t, "subscription after the other principal's attempts", want, get(t, s, "alice", alices.ID))
	diff(t, "inbox after the other principal's attempts", aliceInbox, inbox(t, s, "alice"))
}
