package clocktest_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
)

var t0 = time.Date(2026, 3, 8, 1, 0, 0, 0, time.UTC)

func TestFakeRunsTimersInOrder(t *testing.T) {
	c := clocktest.NewFake(t0)
	var got []string
	at := func(name string) func() { return func() { got = append(got, name+" "+c.Now().Sub(t0).String()) } }
	c.AfterFunc(3*time.Second, at("c"))
	c.AfterFunc(time.Second, at("a"))
	c.AfterFunc(2*time.Second, at("b1"))
	c.AfterFunc(2*time.Second, at("b2")) // same time: in scheduling order
	stopped := c.AfterFunc(time.Second, at("stopped"))
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop must report true once, then false")
	}
	c.Advance(2 * time.Second)
	if diff := cmp.Diff([]string{"a 1s", "b1 2s", "b2 2s"}, got); diff != "" {
		t.Errorf("after 2s mismatch (-want +got):\n%s", diff)
	}
	if c.Pending() != 1 {
		t.Errorf("pending = %d, want 1", c.Pending())
	}
	c.Advance(time.Hour)
	if diff := cmp.Diff([]string{"a 1s", "b1 2s", "b2 2s", "c 3s"}, got); diff != "" {
		t.Errorf("after 1h mismatch (-want +got):\n%s", diff)
	}
	if !c.Now().Equal(t0.Add(time.Hour + 2*time.Second)) {
		t.Errorf("now = %v", c.Now())
	}
}

func TestFakeRunsTimersScheduledByTimers(t *testing.T) {
	c := clocktest.NewFake(t0)
	var ticks []time.Duration
	var tick func()
	tick = func() {
		ticks = append(ticks, c.Now().Sub(t0))
		c.AfterFunc(time.Minute, tick)
	}
	c.AfterFunc(time.Minute, tick)
	c.Advance(3*time.Minute + 30*time.Second)
	if diff := cmp.Diff([]time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute}, ticks); diff != "" {
		t.Errorf("ticks mismatch (-want +got):\n%s", diff)
	}
	if next, ok := c.NextDue(); !ok || !next.Equal(t0.Add(4*time.Minute)) {
		t.Errorf("next due = %v, %v", next, ok)
	}
}

func TestFakeNeverGoesBack(t *testing.T) {
	c := clocktest.NewFake(t0)
	c.AdvanceTo(t0.Add(-time.Hour))
	if !c.Now().Equal(t0) {
		t.Errorf("now = %v after AdvanceTo the past", c.Now())
	}
	ran := false
	c.AfterFunc(-time.Second, func() { ran = true }) // already due
	c.Advance(0)
	if !ran {
		t.Error("a timer already due did not run on Advance(0)")
	}
}

func TestRealAfterFunc(t *testing.T) {
	done := make(chan struct{})
	clock.Real{}.AfterFunc(time.Millisecond, func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Real.AfterFunc never ran")
	}
	if time.Since(clock.Real{}.Now()) > time.Minute {
		t.Error("Real.Now is not the wall clock")
	}
}
