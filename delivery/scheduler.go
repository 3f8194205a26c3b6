// Package delivery holds what the buffered delivery channels share: the
// Scheduler that fires the digests of one channel when they are due. The
// channels themselves are subpackages: delivery/cron (a digest on a cron
// schedule) and delivery/scheduled (one batch at a set time) decide when a
// subscription fires; delivery/realtime sends what is delivered to the
// owner's live sessions.
package delivery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// DefaultRetry is how long a Scheduler whose fire failed waits before it
// tries again.
const DefaultRetry = time.Minute

// Firer is what a Scheduler needs from the subscriptions service
// (*subscriptions.Service implements it): when the next fire of a channel
// is, to fire what is due, and to hear when the schedule changes.
type Firer interface {
	NextFire(ctx context.Context, c mcpe.Channel) (t time.Time, ok bool, err error)
	FireDue(ctx context.Context, c mcpe.Channel, now time.Time) (more bool, err error)
	WatchSchedule(c mcpe.Channel, changed func())
}

// SchedulerOptions configure a Scheduler. A nil *SchedulerOptions means all
// defaults.
type SchedulerOptions struct {
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Scheduler fires the due subscriptions of one buffered channel. It keeps
// no schedule of its own: the store has each subscription's next fire, so
// the Scheduler sets one timer for the earliest, fires what is due when it
// goes off, and sets it again whenever the schedule changes. Start it after
// the service, and Stop it before.
type Scheduler struct {
	channel mcpe.Channel
	firer   Firer
	clock   clock.Clock
	log     *slog.Logger

	mu      sync.Mutex // guards the fields below
	started bool
	stopped bool
	timer   clock.Timer
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// NewScheduler returns the scheduler of buffered channel c, or with
// subscriptions.Windows the one that ends throttle windows.
func NewScheduler(c mcpe.Channel, f Firer, opts *SchedulerOptions) (*Scheduler, error) {
	if c != mcpe.ChannelCron && c != mcpe.ChannelScheduled && c != subscriptions.Windows {
		return nil, fmt.Errorf("delivery: %q is not a buffered channel; use %q, %q or %q", c, mcpe.ChannelCron, mcpe.ChannelScheduled, subscriptions.Windows)
	}
	if f == nil {
		return nil, errors.New("delivery: NewScheduler needs a Firer")
	}
	var o SchedulerOptions
	if opts != nil {
		o = *opts
	}
	o.Clock = cmp.Or[clock.Clock](o.Clock, clock.Real{})
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return &Scheduler{channel: c, firer: f, clock: o.Clock, log: o.Logger.With("channel", string(c))}, nil
}

// Start fires what fell due while the server was down (once, however many
// fires were missed), sets the timer for the next fire, and keeps it set as
// the schedule changes until Stop.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("delivery: Scheduler already started")
	}
	s.started = true
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.mu.Unlock()
	s.firer.WatchSchedule(s.channel, s.rearm)
	s.fire()
	return nil
}

// Stop stops the timer and waits for a fire in progress. It is safe to call
// more than once.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	s.stopped = true
	s.setLocked(time.Time{})
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// fire fires what is due, a chunk at a time, then sets the timer for the
// next fire; after a failure it tries again after the retry wait.
func (s *Scheduler) fire() {
	for {
		more, err := s.firer.FireDue(s.ctx, s.channel, s.clock.Now())
		if err != nil {
			s.log.Error("fire digests; retrying later", "retry_in", DefaultRetry, "error", err)
			s.mu.Lock()
			s.setLocked(s.clock.Now().Add(DefaultRetry))
			s.mu.Unlock()
			return
		}
		if !more {
			break
		}
	}
	s.rearm()
}

// rearm sets the timer for the earliest next fire the store has. It holds
// the lock across the read, so that of two rearms the one that sets the
// timer last has read last.
func (s *Scheduler) rearm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || !s.started {
		return
	}
	next, ok, err := s.firer.NextFire(s.ctx, s.channel)
	switch {
	case err != nil:
		s.log.Error("find the next fire; looking again later", "retry_in", DefaultRetry, "error", err)
		next = s.clock.Now().Add(DefaultRetry)
	case !ok:
		next = time.Time{}
	}
	s.setLocked(next)
}

// setLocked replaces the timer with one going off at t, or with none when t
// is zero.
func (s *Scheduler) setLocked(t time.Time) {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if t.IsZero() || s.stopped {
		return
	}
	s.timer = s.clock.AfterFunc(max(t.Sub(s.clock.Now()), 0), func() {
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		s.wg.Add(1)
		s.mu.Unlock()
		defer s.wg.Done()
		s.fire()
	})
}

// Schedulers are the schedulers of several channels, stopped together.
type Schedulers []*Scheduler

// Stop stops every scheduler.
func (ss Schedulers) Stop() {
	for _, s := range ss {
		s.Stop()
	}
}
