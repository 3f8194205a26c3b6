package delivery_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/delivery"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

var t0 = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

// firer is a Firer over a list of fire times: FireDue takes the due ones
// (at most chunk per call) and records when it ran.
type firer struct {
	mu      sync.Mutex
	pending []time.Time
	chunk   int
	fails   int // FireDue fails this many more times
	fired   []string
	watch   func()
}

func (f *firer) NextFire(context.Context, mcpe.Channel) (time.Time, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pending) == 0 {
		return time.Time{}, false, nil
	}
	return slices.MinFunc(f.pending, time.Time.Compare), true, nil
}

func (f *firer) FireDue(_ context.Context, _ mcpe.Channel, now time.Time) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fails > 0 {
		f.fails--
		return false, errors.New("store unavailable")
	}
	n := 0
	kept := f.pending[:0]
	for _, t := range f.pending {
		if !t.After(now) && n < f.chunk {
			n++
			f.fired = append(f.fired, t.Format("15:04")+"@"+now.Format("15:04"))
			continue
		}
		kept = append(kept, t)
	}
	f.pending = kept
	return n == f.chunk, nil
}

func (f *firer) WatchSchedule(_ mcpe.Channel, changed func()) { f.watch = changed }

// add schedules a fire at t and tells the scheduler, as the service does.
func (f *firer) add(t time.Time) {
	f.mu.Lock()
	f.pending = append(f.pending, t)
	f.mu.Unlock()
	f.watch()
}

func (f *firer) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.fired)
}

func start(t *testing.T, f *firer, clk *clocktest.Fake) *delivery.Scheduler {
	t.Helper()
	s, err := delivery.NewScheduler(mcpe.ChannelCron, f, &delivery.SchedulerOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func TestSchedulerFiresMissedOnceAtStartThenOnTime(t *testing.T) {
	clk := clocktest.NewFake(t0)
	f := &firer{chunk: 2, pending: []time.Time{t0.Add(-3 * time.Hour), t0.Add(-2 * time.Hour), t0.Add(-time.Hour), t0.Add(time.Hour)}}
	start(t, f, clk)
	// The three missed ones, in chunks of two, at start.
	if diff := cmp.Diff([]string{"05:00@08:00", "06:00@08:00", "07:00@08:00"}, f.got()); diff != "" {
		t.Fatalf("fires at start mismatch (-want +got):\n%s", diff)
	}
	clk.Advance(59 * time.Minute)
	if got := len(f.got()); got != 3 {
		t.Fatalf("fired early: %v", f.got())
	}
	clk.Advance(time.Minute)
	if diff := cmp.Diff("09:00@09:00", f.got()[3]); diff != "" {
		t.Errorf("on-time fire mismatch (-want +got):\n%s", diff)
	}
}

func TestSchedulerRearmsWhenTheScheduleChanges(t *testing.T) {
	clk := clocktest.NewFake(t0)
	f := &firer{chunk: 10, pending: []time.Time{t0.Add(2 * time.Hour)}}
	start(t, f, clk)
	f.add(t0.Add(30 * time.Minute)) // earlier than the timer set
	clk.Advance(30 * time.Minute)
	clk.Advance(90 * time.Minute)
	if diff := cmp.Diff([]string{"08:30@08:30", "10:00@10:00"}, f.got()); diff != "" {
		t.Errorf("fires mismatch (-want +got):\n%s", diff)
	}
	if clk.Pending() != 0 {
		t.Errorf("%d timers left with nothing scheduled", clk.Pending())
	}
}

func TestSchedulerRetriesAfterAFailedFire(t *testing.T) {
	clk := clocktest.NewFake(t0)
	f := &firer{chunk: 10, fails: 2, pending: []time.Time{t0}}
	start(t, f, clk)
	if len(f.got()) != 0 {
		t.Fatalf("fired despite the failure: %v", f.got())
	}
	clk.Advance(time.Minute) // second failure
	clk.Advance(time.Minute)
	if diff := cmp.Diff([]string{"08:00@08:02"}, f.got()); diff != "" {
		t.Errorf("fires mismatch (-want +got):\n%s", diff)
	}
}

func TestSchedulerStop(t *testing.T) {
	clk := clocktest.NewFake(t0)
	f := &firer{chunk: 10, pending: []time.Time{t0.Add(time.Hour)}}
	s := start(t, f, clk)
	s.Stop()
	s.Stop()
	f.add(t0.Add(time.Minute))
	clk.Advance(2 * time.Hour)
	if len(f.got()) != 0 || clk.Pending() != 0 {
		t.Errorf("a stopped scheduler fired %v (%d timers)", f.got(), clk.Pending())
	}
	if err := s.Start(t.Context()); err == nil {
		t.Error("Start after Start succeeded")
	}
}

func TestNewSchedulerRefusesOtherChannels(t *testing.T) {
	if _, err := delivery.NewScheduler(mcpe.ChannelRealtime, &firer{}, nil); err == nil {
		t.Error("a scheduler for realtime was made")
	}
	all, err := delivery.StartAll(t.Context(), &firer{chunk: 1}, []mcpe.Channel{mcpe.ChannelRealtime, mcpe.ChannelCron, mcpe.ChannelScheduled}, nil)
	if err != nil || len(all) != 2 {
		t.Errorf("StartAll = %d schedulers, %v; want 2", len(all), err)
	}
	all.Stop()
}
