// Package clocktest is a manually advanced clock.Clock for tests.
package clocktest

import (
	"sort"
	"sync"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
)

var _ clock.Clock = (*Fake)(nil)

// Fake is a manually advanced clock for tests. Its zero value is not usable;
// create one with NewFake.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	seq    int
}

// NewFake returns a Fake clock set to now.
func NewFake(now time.Time) *Fake { return &Fake{now: now} }

// Now returns the fake current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// AfterFunc schedules fn to run when the clock is advanced past now+d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) clock.Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	t := &fakeTimer{clock: f, when: f.now.Add(d), fn: fn, seq: f.seq}
	f.timers = append(f.timers, t)
	return t
}

// Advance moves the clock forward by d and runs, synchronously and in time
// order, every timer that falls due on the way. Timers scheduled by those
// functions run too if they fall due before the new time.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	target := f.now.Add(d)
	f.mu.Unlock()
	f.AdvanceTo(target)
}

// AdvanceTo moves the clock forward to t (never backwards) and runs the
// timers that fall due, as Advance does.
func (f *Fake) AdvanceTo(t time.Time) {
	for {
		f.mu.Lock()
		next := f.nextDueLocked(t)
		if next == nil {
			if t.After(f.now) {
				f.now = t
			}
			f.mu.Unlock()
			return
		}
		if next.when.After(f.now) {
			f.now = next.when
		}
		f.removeLocked(next)
		fn := next.fn
		f.mu.Unlock()
		fn()
	}
}

// Pending returns how many timers are waiting.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// NextDue returns when the earliest pending timer falls due.
func (f *Fake) NextDue() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.timers) == 0 {
		return time.Time{}, false
	}
	f.sortLocked()
	return f.timers[0].when, true
}

func (f *Fake) nextDueLocked(limit time.Time) *fakeTimer {
	if len(f.timers) == 0 {
		return nil
	}
	f.sortLocked()
	if first := f.timers[0]; !first.when.After(limit) {
		return first
	}
	return nil
}

func (f *Fake) sortLocked() {
	sort.SliceStable(f.timers, func(i, j int) bool {
		if f.timers[i].when.Equal(f.timers[j].when) {
			return f.timers[i].seq < f.timers[j].seq
		}
		return f.timers[i].when.Before(f.timers[j].when)
	})
}

func (f *Fake) removeLocked(t *fakeTimer) bool {
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return true
		}
	}
	return false
}

type fakeTimer struct {
	clock *Fake
	when  time.Time
	fn    func()
	seq   int
}

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	return t.clock.removeLocked(t)
}
