package main

import (
	"math"
	"strings"
	"testing"
)

// quiet is a deployment whose only costs are those a test sets.
func quiet() Params {
	return Params{Servers: 1, ServerCores: 4, DBCores: 4, Principals: 1, Reach: 1, Warmup: 1, Measure: 20, Seed: 7}
}

func near(t *testing.T, what string, got, want, tolerance float64) {
	t.Helper()
	if math.Abs(got-want) > tolerance*want {
		t.Errorf("%s = %.1f, want %.1f within %.0f%%", what, got, want, tolerance*100)
	}
}

// TestLightLoadCostsWhatItIsCharged: far from any bound, every post is
// accepted and an event costs its own share plus its commit's share of
// the per-commit costs.
func TestLightLoadCostsWhatItIsCharged(t *testing.T) {
	p := quiet()
	p.Servers, p.Rate = 3, 200
	p.ServerEvent, p.ServerCommit, p.ServerNote, p.ServerWake = 30, 200, 10, 100
	p.DBEvent, p.DBCommit, p.DBListener, p.DBWake, p.Flush = 50, 300, 20, 120, 100
	r, err := Simulate(p)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "accepted/s", r.Accepted, 200, 0.1)
	epc := r.EventsPerCommit
	if epc < 1 || epc > 1.05 {
		t.Errorf("events per commit %.3f; at 200/s over 3 servers commits should rarely meet", epc)
	}
	// The session is on the last server: 2 events in 3 are read back
	// there, one read each (or fewer when they arrive during a read).
	wakes := 2.0 / 3
	near(t, "server CPU per event", r.ServerCPU, 30+200/epc+10+100*wakes, 0.05)
	near(t, "database CPU per event", r.DBCPU, 50+(300+20*3)/epc+120*wakes, 0.05)
	if r.DeliverP50 < 0.5 || r.DeliverP50 > 2 {
		t.Errorf("delivery p50 %.2f ms; the path costs about 1 ms with no wait", r.DeliverP50)
	}
}

// TestOneServerCommitsOneAtATime: a server's commits follow one another,
// so one that costs the database 1 ms per event accepts at most 1 000
// events a second however many cores wait idle, even when the events'
// principals (1 000 of them) would let commits run side by side.
func TestOneServerCommitsOneAtATime(t *testing.T) {
	p := quiet()
	p.Posters, p.DBCores, p.DBEvent, p.Principals = 64, 64, 1000, 1000
	r, err := Simulate(p)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "accepted/s", r.Accepted, 1000, 0.03)
	if r.DBUse > 1.01 {
		t.Errorf("database used %.2f cores by one server's commits; they take one at a time", r.DBUse)
	}
}

// TestNotifyLockBoundsCommits: every commit holds the notify lock through
// its flush, so with 1 ms flushes the servers together commit at most 1 000
// times a second, and they answer the load with bigger commits.
func TestNotifyLockBoundsCommits(t *testing.T) {
	p := quiet()
	p.Servers, p.Principals, p.Reach, p.Rate, p.Flush = 4, 1000, 1, 8000, 1000
	r, err := Simulate(p)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "accepted/s", r.Accepted, 8000, 0.05)
	near(t, "commits/s", r.Accepted/r.EventsPerCommit, 1000, 0.03)
	if r.NotifyLockUse < 0.97 {
		t.Errorf("notify lock held %.2f of the time; it is the bound", r.NotifyLockUse)
	}
}

func TestSameSeedSameResult(t *testing.T) {
	p := defaults()
	p.Servers, p.Rate, p.Principals, p.Reach, p.Measure = 4, 3000, 500, 5, 2
	a, err := Simulate(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Simulate(p)
	if a != b {
		t.Errorf("two runs of one seed differ:\n%+v\n%+v", a, b)
	}
}

func TestRefusesWhatItCannotSimulate(t *testing.T) {
	for _, c := range []struct {
		change func(*Params)
		says   string
	}{
		{func(p *Params) { p.Servers = 0 }, "-servers"},
		{func(p *Params) { p.ServerCores = 0 }, "-server-cores"},
		{func(p *Params) { p.Rate = 0 }, "-posters"},
		{func(p *Params) { p.Rate = 1e7 }, "-rate"},
		{func(p *Params) { p.Reach = 3 }, "-reach"},
		{func(p *Params) { p.Flush = math.NaN() }, "a cost"},
		{func(p *Params) { p.Measure = 0 }, "-measure"},
	} {
		p := quiet()
		p.Rate = 100
		c.change(&p)
		if _, err := Simulate(p); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: error %v, want one naming %s", p, err, c.says)
		}
	}
}

// TestBatchRowsBoundsCommits: with -batch-rows a commit takes events while
// their rows fit, and at least one.
func TestBatchRowsBoundsCommits(t *testing.T) {
	p := quiet()
	p.Servers, p.Principals, p.Reach, p.Posters, p.Flush = 2, 1000, 10, 64, 1000
	r, err := Simulate(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.EventsPerCommit < 10 {
		t.Fatalf("without a bound, commits carry %.1f events; the test wants big ones", r.EventsPerCommit)
	}
	for _, c := range []struct {
		rows int
		want float64
	}{{20, 2}, {5, 1}} {
		p.BatchRows = c.rows
		if r, err = Simulate(p); err != nil {
			t.Fatal(err)
		}
		if r.EventsPerCommit != c.want {
			t.Errorf("-batch-rows %d: %.2f events per commit, want %g", c.rows, r.EventsPerCommit, c.want)
		}
	}
}

// TestGatheringWhileWaiting: servers taking turns at one principal's row
// commit more events a turn when a commit that waited makes the next add
// what queued meanwhile, and accept more; a server alone never waits, so
// gathering changes nothing for it.
func TestGatheringWhileWaiting(t *testing.T) {
	for _, servers := range []int{1, 3} {
		p := quiet()
		p.Servers, p.Posters = servers, 48
		p.ServerEvent, p.ServerCommit, p.DBEvent, p.DBCommit, p.Flush = 30, 200, 50, 300, 100
		off, err := Simulate(p)
		if err != nil {
			t.Fatal(err)
		}
		p.GatherAfter, p.ServerTrip, p.DBTrip = 200, 50, 50
		on, err := Simulate(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d servers: %.0f/s and %.2f events a commit, gathering: %.0f/s and %.2f", servers, off.Accepted, off.EventsPerCommit, on.Accepted, on.EventsPerCommit)
		if servers == 1 && (on.Accepted != off.Accepted || on.EventsPerCommit != off.EventsPerCommit) {
			t.Errorf("one server: gathering changed %.0f/s, %.2f events a commit to %.0f/s, %.2f", off.Accepted, off.EventsPerCommit, on.Accepted, on.EventsPerCommit)
		}
		if servers > 1 && (on.EventsPerCommit < 1.5*off.EventsPerCommit || on.Accepted < 1.05*off.Accepted) {
			t.Errorf("%d servers: gathering took %.0f/s, %.2f events a commit to %.0f/s, %.2f; want half as many events a commit more, and more accepted", servers, off.Accepted, off.EventsPerCommit, on.Accepted, on.EventsPerCommit)
		}
	}
}
