package subscriptions_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

func runOpts(lost *atomic.Int32) subscriptions.ServiceOptions {
	o := subscriptions.ServiceOptions{
		EphemeralPrefix: "session:",
		RunLost:         func() { lost.Add(1) },
	}
	subscriptions.SetMarks(&o, 30*time.Second, 3*time.Minute)
	return o
}

func storedIDs(t *testing.T, s subscriptions.Store) []string {
	t.Helper()
	subs, err := s.ListSubscriptions(context.Background(), subscriptions.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sub := range subs {
		ids = append(ids, sub.ID)
	}
	return ids
}

// TestLapsedRunIsReclaimed runs two servers on one database, each on a
// clock of its own. The first stops marking its run (as a killed or frozen
// process does): once its last mark is MarkLapse old, the second deletes
// what its sessions own, and routes nothing more to them; the first, back,
// learns it at its next mark and calls RunLost.
func TestLapsedRunIsReclaimed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	var lostA, lostB atomic.Int32
	clkA, clkB := clocktest.NewFake(svcStart), clocktest.NewFake(svcStart)
	a := newFixture(t, path, clkA, runOpts(&lostA))
	gone := a.subscribe(a.svc.RunPrefix()+"s1", every("x"))
	older := a.subscribe("session:abc", every("x")) // a principal named before runs
	local := a.subscribe("local", every("x"))
	// b loads a's subscriptions as it starts.
	b := newFixture(t, path, clkB, runOpts(&lostB))
	if pa, pb := a.svc.RunPrefix(), b.svc.RunPrefix(); !strings.HasPrefix(pa, "session:") || !strings.HasSuffix(pa, ":") || pa == pb {
		t.Fatalf("RunPrefix = %q and %q; want two distinct session:RUN: prefixes", pa, pb)
	}
	ofB := b.subscribe(b.svc.RunPrefix()+"s1", every("x"))

	// b marks every 30 seconds; a, frozen, does not. Short of the lapse,
	// nothing goes.
	for range 5 {
		clkB.Advance(30 * time.Second)
	}
	if diff := cmp.Diff([]string{gone.ID, older.ID, local.ID, ofB.ID}, storedIDs(t, b.store)); diff != "" {
		t.Fatalf("stored before the lapse (-want +got):\n%s", diff)
	}
	b.publish("x")
	if got := len(b.rec.delivered()); got != 4 {
		t.Fatalf("b delivered %d before the lapse, want 4: %v", got, b.rec.delivered())
	}

	// a's mark, made at the start, is now more than 3 minutes old.
	clkB.Advance(30 * time.Second)
	clkB.Advance(30 * time.Second)
	if diff := cmp.Diff([]string{older.ID, local.ID, ofB.ID}, storedIDs(t, b.store)); diff != "" {
		t.Fatalf("stored after a's run lapsed (-want +got):\n%s", diff)
	}
	b.publish("x")
	want := []string{"session:abc " + older.ID, "local " + local.ID, b.svc.RunPrefix() + "s1 " + ofB.ID}
	got := b.rec.delivered()[4:]
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("b's deliveries after a's run lapsed (-want +got):\n%s", diff)
	}
	if lostA.Load() != 0 || lostB.Load() != 0 {
		t.Fatalf("RunLost called %d and %d times before a marked again", lostA.Load(), lostB.Load())
	}

	// a wakes up: its next mark finds its run taken as ended.
	clkA.Advance(30 * time.Second)
	if lostA.Load() != 1 || lostB.Load() != 0 {
		t.Errorf("RunLost called %d times on a and %d on b; want once on a", lostA.Load(), lostB.Load())
	}
	clkA.Advance(30 * time.Second)
	if lostA.Load() != 1 {
		t.Errorf("RunLost called %d times after a marked again; want once", lostA.Load())
	}
}

// TestRunMarkedIsKept checks that a run that goes on marking keeps its
// sessions' subscriptions however long it lives, and that Stop deletes
// them.
func TestRunMarkedIsKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	var lost atomic.Int32
	clk := clocktest.NewFake(svcStart)
	a := newFixture(t, path, clk, runOpts(&lost))
	b := newFixture(t, path, clk, runOpts(&lost))
	subA := a.subscribe(a.svc.RunPrefix()+"s1", every("x"))
	subB := b.subscribe(b.svc.RunPrefix()+"s1", every("x"))
	for range 20 {
		clk.Advance(30 * time.Second)
	}
	if diff := cmp.Diff([]string{subA.ID, subB.ID}, storedIDs(t, b.store)); diff != "" {
		t.Fatalf("stored after ten minutes of both marking (-want +got):\n%s", diff)
	}
	a.stop()
	if diff := cmp.Diff([]string{subB.ID}, storedIDs(t, b.store)); diff != "" {
		t.Errorf("stored after a stopped (-want +got):\n%s", diff)
	}
	runB := strings.TrimSuffix(strings.TrimPrefix(b.svc.RunPrefix(), "session:"), ":")
	if runs, err := b.store.LapsedRuns(context.Background(), svcStart.Add(time.Hour), 10); err != nil || !slices.Equal(runs, []string{runB}) {
		t.Errorf("runs marked after a stopped = %q, %v; want b's alone, %q", runs, err, runB)
	}
	if lost.Load() != 0 {
		t.Errorf("RunLost called %d times", lost.Load())
	}
}

func TestMarkOptionsChecked(t *testing.T) {
	store, err := sqlite.Open(context.Background(), subscriptionsMemory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for _, m := range []struct{ interval, lapse time.Duration }{
		{time.Minute, time.Minute},
		{-time.Second, 0},
		{0, 50 * time.Second}, // under twice the default interval
	} {
		o := subscriptions.ServiceOptions{Store: store, Deliverer: &recorder{}}
		subscriptions.SetMarks(&o, m.interval, m.lapse)
		if _, err := subscriptions.NewService(o); err == nil || !strings.Contains(err.Error(), "markLapse") {
			t.Errorf("NewService(mark interval %v, lapse %v) = %v; want an error naming markLapse", m.interval, m.lapse, err)
		}
	}
}

// blindStore cannot tell whether other processes use it.
type blindStore struct{ *sqlite.Store }

func (blindStore) OpenedBeside() (bool, error) {
	return true, errors.New("permission denied for pg_stat_activity")
}

// TestStartKeepsSessionsWhenUnsure checks that a service whose store
// cannot tell whether others use it keeps what earlier runs' sessions
// own, and says why; a store opened alone lets it go.
func TestStartKeepsSessionsWhenUnsure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	clk := clocktest.NewFake(svcStart)
	earlier := newFixture(t, path, clk, subscriptions.ServiceOptions{})
	left := earlier.subscribe("session:abc", every("x"))
	earlier.stop()

	start := func(store subscriptions.Store) string {
		t.Helper()
		var logs bytes.Buffer
		opts := runOpts(new(atomic.Int32))
		opts.Store, opts.Clock, opts.Deliverer = store, clk, &recorder{}
		opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		svc, err := subscriptions.NewService(opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		svc.Stop()
		return logs.String()
	}
	store, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	logs := start(blindStore{store})
	if diff := cmp.Diff([]string{left.ID}, storedIDs(t, store)); diff != "" {
		t.Errorf("stored after a start unsure of others (-want +got):\n%s", diff)
	}
	if !strings.Contains(logs, "could not tell whether other servers use the store") || !strings.Contains(logs, "permission denied for pg_stat_activity") {
		t.Errorf("log of a start unsure of others does not say so:\n%s", logs)
	}
	start(store)
	if got := storedIDs(t, store); len(got) != 0 {
		t.Errorf("stored after a start alone: %v, want none", got)
	}
}
