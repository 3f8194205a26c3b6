package storetest

import (
	"slices"
	"testing"
	"time"
)

// testRuns checks the contract of subscriptions.Runs on two stores of one
// database: marks are seen by both, a lapsed run is reclaimed with what
// its principals own (and nothing else), and a run marked since, or gone,
// is not.
func testRuns(t *testing.T, open PairOpener) {
	a, b := open(t)
	ctx := t.Context()
	mark := func(s SharedStore, run string, d time.Duration, want bool) {
		t.Helper()
		if known, err := s.MarkRun(ctx, run, at(d)); err != nil || known != want {
			t.Fatalf("MarkRun(%s, +%v) = %v, %v; want %v", run, d, known, err, want)
		}
	}
	lapsed := func(s SharedStore, d time.Duration, limit int, want ...string) {
		t.Helper()
		got, err := s.LapsedRuns(ctx, at(d), limit)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("LapsedRuns(+%v, %d) = %q, %v; want %q", d, limit, got, err, want)
		}
	}
	reclaim := func(s SharedStore, run string, before time.Time, prefix string, wantGone bool, wantSubs int) {
		t.Helper()
		gone, n, err := s.ReclaimRun(ctx, run, before, prefix)
		if err != nil || gone != wantGone || n != wantSubs {
			t.Fatalf("ReclaimRun(%s, %v, %q) = %v, %d, %v; want %v, %d", run, before, prefix, gone, n, err, wantGone, wantSubs)
		}
	}

	mark(a, "r1", 0, false)
	mark(a, "r1", time.Minute, true)
	mark(b, "r2", 2*time.Minute, false)
	mark(b, "r10", 3*time.Minute, false)
	lapsed(b, time.Minute, 10)
	lapsed(b, 90*time.Second, 10, "r1")
	lapsed(a, time.Hour, 10, "r1", "r2", "r10")
	lapsed(a, time.Hour, 2, "r1", "r2")

	principals := []string{"s:r1:a", "s:r1:b", "s:r2:a", "s:r10:a", "s:r1", "alice"}
	before := populate(t, a, principals, []int{2, 1, 1, 1, 1, 1})
	check := func(what string, gone ...string) {
		t.Helper()
		for _, p := range principals {
			want := before[p]
			if slices.Contains(gone, p) {
				want = principalState{}
			}
			diff(t, what+": what "+p+" owns", want, stateOf(t, b, p))
		}
	}

	// Marked at +1m, not before +30s: kept, and so is what it owns.
	reclaim(b, "r1", at(30*time.Second), "s:r1:", false, 0)
	check("r1 marked since")
	lapsed(b, 90*time.Second, 10, "r1")
	// Lapsed: its mark and its principals go, "s:r10:a" and "s:r1" stay.
	reclaim(b, "r1", at(90*time.Second), "s:r1:", true, 3)
	check("r1 reclaimed", "s:r1:a", "s:r1:b")
	lapsed(a, time.Hour, 10, "r2", "r10")
	// Its server learns it at its next mark.
	mark(a, "r1", 5*time.Minute, false)
	// A run that has no mark is not reclaimed, whatever the prefix.
	reclaim(a, "gone", at(time.Hour), "s:r2:", false, 0)
	check("a run without a mark", "s:r1:a", "s:r1:b")
	// A zero time reclaims whatever the mark's age.
	reclaim(b, "r2", time.Time{}, "s:r2:", true, 1)
	check("r2 ended", "s:r1:a", "s:r1:b", "s:r2:a")
	lapsed(a, time.Hour, 10, "r10", "r1")
	// With a zero time and no mark, what the prefix owns still goes.
	reclaim(a, "r2", time.Time{}, "s:r10:", false, 1)
	check("r10's principals without r2's mark", "s:r1:a", "s:r1:b", "s:r2:a", "s:r10:a")
	lapsed(a, time.Hour, 10, "r10", "r1")

	if _, err := a.MarkRun(ctx, "", at(0)); err == nil {
		t.Error("MarkRun of an empty run: no error")
	}
	if _, _, err := a.ReclaimRun(ctx, "r1", time.Time{}, ""); err == nil {
		t.Error("ReclaimRun with an empty prefix: no error")
	}
	lapsed(a, time.Hour, 10, "r10", "r1")
}
