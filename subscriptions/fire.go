package subscriptions

import (
	"context"
	"slices"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// fireChunk is how many subscriptions one Store.Fire transaction serves when
// many fire at once.
const fireChunk = 256

// fireRetry is how long a fire that the store refused waits before trying
// again.
const fireRetry = time.Minute

// timedState is the fire schedule of one active cron or scheduled
// subscription.
type timedState struct {
	id        string
	principal string
	delivery  mcpe.Delivery
	next      time.Time
	lastFire  *time.Time
}

// scheduleLocked puts an active subscription with a next fire into the
// schedule, replacing its old state; anything else leaves it. The caller
// holds s.mu and re-arms the fire timer.
func (s *Service) scheduleLocked(sub *Subscription) {
	delete(s.timed, sub.ID)
	if sub.Status != mcpe.StatusActive || sub.NextFireAt == nil || s.timings[sub.Delivery.Timed()] == nil {
		return
	}
	s.timed[sub.ID] = &timedState{
		id:        sub.ID,
		principal: sub.Principal,
		delivery:  sub.Delivery,
		next:      *sub.NextFireAt,
		lastFire:  clonePtr(sub.LastFireAt),
	}
}

// armFireLocked sets the fire timer to the earliest scheduled fire, looking
// at every scheduled subscription. The caller holds s.mu.
func (s *Service) armFireLocked() {
	var first time.Time
	for _, t := range s.timed {
		if first.IsZero() || t.next.Before(first) {
			first = t.next
		}
	}
	s.fireAt = first
	s.rearm(&s.fireTimer, first, s.fireDue)
}

// considerFireLocked moves the fire timer earlier when a subscription just
// scheduled fires at t, without looking at the others. The caller holds s.mu.
func (s *Service) considerFireLocked(t time.Time) {
	if s.fireAt.IsZero() || t.Before(s.fireAt) {
		s.fireAt = t
		s.rearm(&s.fireTimer, t, s.fireDue)
	}
}

// nextFire computes the first fire of delivery d after now, given the last
// fire.
func (s *Service) nextFire(d mcpe.Delivery, now time.Time, lastFire *time.Time) *time.Time {
	timing := s.timings[d.Timed()]
	if timing == nil {
		return nil
	}
	next, ok := timing.Next(d, now, lastFire)
	if !ok {
		return nil
	}
	return &next
}

// fireDue fires every scheduled subscription whose time has come, a chunk of
// them per store transaction, delivers the results and re-arms the timer.
// A fire that falls while the server is down runs once when it starts: the
// next fire is computed from the time it ran.
func (s *Service) fireDue() {
	ctx := s.bg()
	for {
		s.mu.Lock()
		now := s.clock.Now()
		var due []*timedState
		for _, t := range s.timed {
			if !t.next.After(now) {
				due = append(due, t)
			}
		}
		if len(due) == 0 {
			s.armFireLocked()
			s.mu.Unlock()
			return
		}
		slices.SortFunc(due, func(a, b *timedState) int {
			if c := a.next.Compare(b.next); c != 0 {
				return c
			}
			return compareStrings(a.id, b.id)
		})
		due = due[:min(len(due), fireChunk)]
		entries, err := s.fireLocked(ctx, due, now)
		if err != nil {
			s.log.Error("fire digests; retrying later", "subscriptions", len(due), "error", err)
			for _, t := range due {
				t.next = now.Add(fireRetry)
			}
		}
		s.armFireLocked()
		s.mu.Unlock()
		s.deliverer.Deliver(entries)
		s.jobsWritten()
		if err != nil {
			return
		}
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fireLocked fires the given subscriptions at now and updates the schedule.
// It returns the entries to deliver now: those of owners with no live
// session wait, marked pending, for Redeliver. The caller holds s.mu.
func (s *Service) fireLocked(ctx context.Context, due []*timedState, now time.Time) ([]InboxEntry, error) {
	reqs := make([]FireRequest, len(due))
	for i, t := range due {
		aggregate, max, drain, expire := s.timings[t.delivery.Timed()].Batching(t.delivery)
		next := s.nextFire(t.delivery, now, &now)
		reqs[i] = FireRequest{
			SubscriptionID: t.id,
			Principal:      t.principal,
			Max:            max,
			Aggregate:      aggregate,
			Drain:          drain,
			Next:           next,
			Expire:         next == nil && expire,
			Pending:        s.opts.Presence != nil && !s.opts.Presence.Connected(t.principal),
		}
	}
	results, err := s.store.Fire(ctx, reqs, now)
	if err != nil {
		return nil, err
	}
	var deliver []InboxEntry
	for i, res := range results {
		req, t := reqs[i], due[i]
		switch {
		case res.Skipped || req.Next == nil:
			delete(s.timed, t.id)
		default:
			t.next, t.lastFire = *req.Next, &now
		}
		if req.Expire && !res.Skipped {
			s.index.Remove(t.id)
			s.log.Info("subscription delivered and expired", "subscription_id", t.id)
		}
		if !req.Pending {
			deliver = append(deliver, res.Entries...)
		} else if len(res.Entries) > 0 {
			s.log.Debug("owner offline: digest kept for its next connection", "subscription_id", t.id, "principal", t.principal)
		}
	}
	return deliver, nil
}

// Redeliver sends principal the most recent digests that fired while it had
// no live session (at most ServiceOptions.PendingLimit), and forgets them as
// pending. The server calls it when a session of principal connects.
func (s *Service) Redeliver(ctx context.Context, principal string) error {
	entries, err := s.store.PendingEntries(ctx, principal, s.opts.PendingLimit)
	if err != nil || len(entries) == 0 {
		return err
	}
	s.deliverer.Deliver(entries)
	return s.store.ClearPending(ctx, principal, entries[len(entries)-1].Seq)
}

// view fills in the fields of sub that are derived for the caller: its next
// delivery, in the subscription's zone and in UTC.
func (s *Service) view(sub *Subscription) *Subscription {
	sub.NextDelivery = nil
	timing := s.timings[sub.Delivery.Timed()]
	if timing == nil || sub.NextFireAt == nil || sub.Status != mcpe.StatusActive {
		return sub
	}
	at := *sub.NextFireAt
	sub.NextDelivery = &mcpe.DeliveryTime{
		At:  at.In(timing.Zone(sub.Delivery)).Format(time.RFC3339),
		UTC: at.UTC().Format(time.RFC3339),
	}
	return sub
}
