package subscriptions

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// This file is what a fire of a cron or scheduled subscription does: take
// what waits in its buffer, record the delivery in its owner's inbox, compute
// its next fire, and expire it after its last one. When to fire is decided
// outside the domain, by the schedulers of package delivery: they ask
// NextFire when to wake, call FireDue then, and hear of every change to the
// schedule through WatchSchedule.

// FireChunk is how many subscriptions one FireDue serves, in one Store.Fire
// transaction, when many fire at once.
const FireChunk = 256

// Windows names the ends of throttle windows (mcpe.Throttle) for the
// Scheduler of package delivery: NextFire, FireDue and WatchSchedule work
// on them as on the fires of a buffered channel. The windows are in the
// store, so that they end, once, whichever server is running then.
const Windows mcpe.Channel = "throttle"

// scheduleWatchers calls the functions registered for a buffered channel
// when its schedule may have changed.
type scheduleWatchers struct {
	mu sync.Mutex
	fs map[mcpe.Channel][]func()
}

func (w *scheduleWatchers) add(c mcpe.Channel, f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fs == nil {
		w.fs = make(map[mcpe.Channel][]func())
	}
	w.fs[c] = append(w.fs[c], f)
}

// changed tells the watchers of channels cs ("" names none).
func (w *scheduleWatchers) changed(cs ...mcpe.Channel) {
	var fs []func()
	w.mu.Lock()
	for i, c := range cs {
		if c != "" && !slices.Contains(cs[:i], c) {
			fs = append(fs, w.fs[c]...)
		}
	}
	w.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// WatchSchedule registers changed to be called after the schedule of
// buffered channel c may have changed: a subscription of c was created,
// updated, paused, resumed or removed. It is called synchronously, before
// the change returns to its caller, and must not call back into the Service
// except for NextFire.
func (s *Service) WatchSchedule(c mcpe.Channel, changed func()) { s.watchers.add(c, changed) }

// NextFire returns when the earliest active subscription of buffered
// channel c fires next; ok is false when none is scheduled.
func (s *Service) NextFire(ctx context.Context, c mcpe.Channel) (t time.Time, ok bool, err error) {
	if c == Windows {
		return s.store.NextWindowEnd(ctx)
	}
	return s.store.NextFire(ctx, c)
}

// FireDue fires the active subscriptions of buffered channel c whose next
// fire is at or before now, at most FireChunk of them, earliest first, in
// one store transaction, and delivers the result. more is true when others
// may still be due. A fire that falls while the server is down runs once
// when it is next called: the next fire is computed from now.
func (s *Service) FireDue(ctx context.Context, c mcpe.Channel, now time.Time) (more bool, err error) {
	if c == Windows {
		s.commit.Lock()
		entries, more, err := s.store.EndWindows(ctx, now, FireChunk)
		s.handOver(ctx, entries, entries)
		s.commit.Unlock()
		if len(entries) > 0 {
			s.jobsWritten()
		}
		return more, err
	}
	if s.timings[c] == nil {
		return false, nil
	}
	s.manage.Lock()
	due, err := s.store.DueFires(ctx, c, now, FireChunk)
	fired := false
	if err == nil && len(due) > 0 {
		fired, err = s.fireLocked(ctx, due, now)
	}
	s.manage.Unlock()
	if fired {
		s.jobsWritten()
	}
	return err == nil && len(due) == FireChunk, err
}

// fireLocked fires the given subscriptions at now and delivers what it
// recorded, marked pending (kept) until a session of its owner is sent it:
// a session that becomes live is sent what was kept first. It reports
// whether anything was recorded. The caller holds s.manage.
func (s *Service) fireLocked(ctx context.Context, due []DueFire, now time.Time) (bool, error) {
	reqs := make([]FireRequest, len(due))
	for i, d := range due {
		aggregate, max, drain, expire := s.timings[d.Delivery.Timed()].Batching(d.Delivery)
		next := s.nextFire(d.Delivery, now, &now)
		reqs[i] = FireRequest{
			SubscriptionID: d.SubscriptionID,
			Principal:      d.Principal,
			Max:            max,
			Aggregate:      aggregate,
			Drain:          drain,
			Empty:          next == nil, // a last (one-time) delivery says so even when nothing came
			Next:           next,
			Expire:         next == nil && expire,
			Pending:        s.opts.Presence != nil,
			Due:            d.Due,
		}
	}
	s.commit.Lock()
	began := time.Now()
	results, err := s.store.Fire(ctx, reqs, now)
	if o := s.opts.Observer; o != nil {
		o.StoreOp("fire", time.Since(began), err)
	}
	if err != nil {
		s.commit.Unlock()
		return false, err
	}
	s.observeFires(due, results, now)
	var written []InboxEntry
	for _, res := range results {
		written = append(written, res.Entries...)
	}
	s.handOver(ctx, written, written)
	s.commit.Unlock()
	expired := false
	for i, res := range results {
		if req := reqs[i]; req.Expire && !res.Skipped {
			s.removeEntry(req.SubscriptionID)
			expired = true
			s.log.Info("subscription delivered and expired", "subscription_id", req.SubscriptionID)
		}
	}
	if expired {
		s.routedDeactivations(ctx)
	}
	return len(written) > 0, nil
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

// observeFires tells the Observer how late each fire that ran was, and
// whether it stood for fires missed meanwhile.
func (s *Service) observeFires(due []DueFire, results []FireResult, now time.Time) {
	o := s.opts.Observer
	if o == nil {
		return
	}
	for i, res := range results {
		if res.Skipped || i >= len(due) {
			continue
		}
		d := due[i]
		c := d.Delivery.Timed()
		missed := false
		if last := d.Due; !last.IsZero() {
			next := s.nextFire(d.Delivery, last, &last)
			missed = next != nil && !next.After(now)
		}
		o.Fired(c, max(now.Sub(d.Due), 0), missed)
	}
}
