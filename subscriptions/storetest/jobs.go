package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// This file covers handler jobs: the run each delivery of a subscription
// with a handler records, what DueJobs hands out and FinishJobs records.

// withHandler gives sub a webhook handler with a signing secret.
func withHandler(sub *subscriptions.Subscription) *subscriptions.Subscription {
	sub.Handler = &mcpe.HandlerSpec{
		Type: mcpe.HandlerWebhook,
		URL:  "https://hooks.example.com/" + sub.ID,
	}
	sub.Secrets = &subscriptions.WebhookSecrets{Current: "whsec_" + sub.ID}
	sub.HandlerStatus = &mcpe.HandlerStatus{}
	return sub
}

func dueJobs(t *testing.T, s subscriptions.Store, now time.Time, limit int, skip ...string) []*subscriptions.Invocation {
	t.Helper()
	jobs, err := s.DueJobs(t.Context(), now, limit, subscriptions.JobQuery{Skip: skip})
	if err != nil {
		t.Fatalf("DueJobs: %v", err)
	}
	return jobs
}

func finish(t *testing.T, s subscriptions.Store, done ...subscriptions.JobDone) {
	t.Helper()
	if err := s.FinishJobs(t.Context(), done); err != nil {
		t.Fatalf("FinishJobs: %v", err)
	}
}

func handlerStatus(t *testing.T, s subscriptions.Store, sub *subscriptions.Subscription) mcpe.HandlerStatus {
	t.Helper()
	got := get(t, s, sub.Principal, sub.ID)
	if got.HandlerStatus == nil {
		t.Fatalf("subscription %s has no handler status", sub.ID)
	}
	return *got.HandlerStatus
}

var ignoreJobID = cmpopts.IgnoreFields(subscriptions.Invocation{}, "JobID")

// testJobsFromDeliveries checks that every delivery of a subscription with a
// handler, realtime or digest, becomes one job, and others none.
func testJobsFromDeliveries(t *testing.T, open Opener) {
	s := open(t)
	hooked, plain := withHandler(newSub(1, "alice")), newSub(2, "alice")
	digest := withHandler(cronSub(3, "bob"))
	create(t, s, hooked, plain, digest)

	ev, raw := newEvent(1, "test.created", "")
	publish(t, s, ev, raw, append(targets(hooked, plain), routes(digest)...), at(time.Second))
	raws := fill(t, s, 2, 3, at(2*time.Second), digest)
	fireOne(t, s, fireReq(digest, 2, true), at(time.Hour))

	if _, ok, err := s.NextJobDue(t.Context(), subscriptions.JobQuery{}); err != nil || !ok {
		t.Fatalf("NextJobDue = _, %v, %v; want a job", ok, err)
	}
	if got := dueJobs(t, s, at(0), 10); len(got) != 0 {
		t.Errorf("DueJobs before the deliveries returned %d jobs", len(got))
	}
	got := dueJobs(t, s, at(time.Hour), 10)
	want := []*subscriptions.Invocation{
		{SubscriptionID: hooked.ID, Principal: "alice", Spec: hooked.Handler, Secrets: hooked.Secrets, Attempt: 1, Kind: mcpe.InboxEvent, Event: raw, CreatedAt: at(time.Second)},
		{SubscriptionID: digest.ID, Principal: "bob", Spec: digest.Handler, Secrets: digest.Secrets, Attempt: 1, Kind: mcpe.InboxBatch,
			Events: []json.RawMessage{raw, raws[0]}, Remaining: 2, CreatedAt: at(time.Hour)},
	}
	if diff := cmp.Diff(want, got, ignoreJobID, sameJSON, equateEmpty); diff != "" {
		t.Fatalf("DueJobs mismatch (-want +got):\n%s", diff)
	}
	if got[0].JobID == "" || got[0].JobID == got[1].JobID {
		t.Errorf("job IDs %q and %q: want distinct, non-empty", got[0].JobID, got[1].JobID)
	}
	if got := dueJobs(t, s, at(time.Hour), 10, got[0].JobID); len(got) != 1 || got[0].SubscriptionID != digest.ID {
		t.Errorf("DueJobs skipping the first job returned %+v; want the digest's job alone", got)
	}
	if got := dueJobs(t, s, at(time.Hour), 1); len(got) != 1 {
		t.Errorf("DueJobs with limit 1 returned %d jobs", len(got))
	}
	if st := handlerStatus(t, s, hooked); st.Pending != 1 {
		t.Errorf("pending = %d, want 1", st.Pending)
	}
}

// testFinishJobs checks the outcomes FinishJobs records: success, retry,
// failure, and a handler turned off.
func testFinishJobs(t *testing.T, open Opener) {
	s := open(t)
	sub := withHandler(newSub(1, "alice"))
	create(t, s, sub)
	for i := 1; i <= 4; i++ {
		ev, raw := newEvent(i, "test.created", "")
		publish(t, s, ev, raw, targets(sub), at(time.Duration(i)*time.Second))
	}
	jobs := dueJobs(t, s, at(time.Minute), 10)
	if len(jobs) != 4 {
		t.Fatalf("%d jobs, want 4", len(jobs))
	}
	done := func(i int, o subscriptions.Outcome, when time.Time) subscriptions.JobDone {
		return subscriptions.JobDone{JobID: jobs[i].JobID, SubscriptionID: sub.ID, Outcome: o, At: when}
	}
	finish(t, s,
		done(0, subscriptions.Outcome{Output: "200 OK"}, at(time.Minute)),
		done(1, subscriptions.Outcome{Err: errors.New("503 Service Unavailable"), RetryIn: 30 * time.Second}, at(time.Minute)),
		done(2, subscriptions.Outcome{Err: errors.New("400 Bad Request")}, at(2*time.Minute)),
	)
	st := handlerStatus(t, s, sub)
	want := mcpe.HandlerStatus{Succeeded: 1, Failed: 1, Pending: 2, LastRunAt: new(at(2 * time.Minute)), LastError: "400 Bad Request"}
	if diff := cmp.Diff(want, st, equateEmpty); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}
	// The retried job is due again 30 s after its run; the fourth is due.
	if got := dueJobs(t, s, at(time.Minute+29*time.Second), 10); len(got) != 1 || got[0].JobID != jobs[3].JobID {
		t.Errorf("before the retry is due, DueJobs = %v; want the fourth job alone", got)
	}
	next, ok, err := s.NextJobDue(t.Context(), subscriptions.JobQuery{Skip: []string{jobs[3].JobID}})
	if err != nil || !ok || !next.Equal(at(time.Minute+30*time.Second)) {
		t.Errorf("NextJobDue = %v, %v, %v; want %v", next, ok, err, at(time.Minute+30*time.Second))
	}
	got := dueJobs(t, s, at(time.Minute+30*time.Second), 10)
	if len(got) != 2 || got[0].JobID != jobs[3].JobID || got[1].JobID != jobs[1].JobID || got[1].Attempt != 2 {
		t.Fatalf("after the retry delay, DueJobs = %+v %+v; want the fourth job, then the retried one at attempt 2 (oldest due first)", got[0], got[len(got)-1])
	}

	// A 410 turns the handler off: its jobs go and deliveries make none.
	finish(t, s, subscriptions.JobDone{JobID: jobs[1].JobID, SubscriptionID: sub.ID, At: at(time.Hour),
		Outcome: subscriptions.Outcome{Err: errors.New("410 Gone"), Disable: true}})
	ev, raw := newEvent(9, "test.created", "")
	publish(t, s, ev, raw, targets(sub), at(time.Hour))
	if got := dueJobs(t, s, at(2*time.Hour), 10); len(got) != 0 {
		t.Errorf("a handler turned off still has %d jobs", len(got))
	}
	st = handlerStatus(t, s, sub)
	if st.Disabled != "410 Gone" || st.Pending != 0 || st.Failed != 2 {
		t.Errorf("after 410: status %+v; want disabled \"410 Gone\", failed 2, nothing pending", st)
	}
	// Setting the handler again turns it on.
	if err := s.SetHandler(t.Context(), "alice", sub.ID, sub.Handler, sub.Secrets); err != nil {
		t.Fatal(err)
	}
	ev, raw = newEvent(10, "test.created", "")
	publish(t, s, ev, raw, targets(sub), at(3*time.Hour))
	if got := dueJobs(t, s, at(3*time.Hour), 10); len(got) != 1 {
		t.Errorf("after SetHandler, %d jobs; want 1", len(got))
	}
	if st := handlerStatus(t, s, sub); st.Disabled != "" {
		t.Errorf("after SetHandler the handler is still off: %q", st.Disabled)
	}
	// Finishing a job twice (or one that went) changes nothing.
	finish(t, s, done(0, subscriptions.Outcome{}, at(4*time.Hour)))
	if st := handlerStatus(t, s, sub); st.Succeeded != 1 {
		t.Errorf("a job finished twice counted twice: %+v", st)
	}

	// The latest output is kept up to MaxStatusOutput bytes, whole when it
	// fits, else cut on a character boundary and marked.
	fits := strings.Repeat("a", mcpe.MaxStatusOutput)
	long := strings.Repeat("é", mcpe.MaxStatusOutput) // 2 bytes each
	for i, out := range []string{fits, long} {
		for _, j := range dueJobs(t, s, at(5*time.Hour), 10) { // those left above
			finish(t, s, subscriptions.JobDone{JobID: j.JobID, SubscriptionID: sub.ID, At: at(5 * time.Hour)})
		}
		ev, raw := newEvent(20+i, "test.created", "")
		publish(t, s, ev, raw, targets(sub), at(5*time.Hour))
		jobs := dueJobs(t, s, at(5*time.Hour), 10)
		if len(jobs) != 1 {
			t.Fatalf("%d jobs, want 1", len(jobs))
		}
		finish(t, s, subscriptions.JobDone{JobID: jobs[0].JobID, SubscriptionID: sub.ID, At: at(5 * time.Hour), Outcome: subscriptions.Outcome{Output: out}})
		got := handlerStatus(t, s, sub).LastOutput
		switch {
		case out == fits && got != fits:
			t.Errorf("an output of %d bytes was not kept whole: %d bytes kept", len(fits), len(got))
		case out == long:
			kept := strings.TrimRightFunc(got, func(r rune) bool { return r != 'é' })
			if !utf8.ValidString(got) || !strings.HasPrefix(long, kept) || len(kept) < mcpe.MaxStatusOutput-1 ||
				len(kept) > mcpe.MaxStatusOutput || kept == got {
				t.Errorf("an output of %d bytes was kept as %d bytes (%d of the output, marked: %v); want at most %d of it, cut on a character, marked",
					len(long), len(got), len(kept), kept != got, mcpe.MaxStatusOutput)
			}
		}
	}
}

// testJobsGoWithTheirHandler checks that removing a handler or its
// subscription drops its jobs, and that a handler, with its secrets, round
// trips.
func testJobsGoWithTheirHandler(t *testing.T, open Opener) {
	s := open(t)
	a, b := withHandler(newSub(1, "alice")), withHandler(newSub(2, "alice"))
	a.Secrets.Previous = "whsec_old"
	a.Secrets.PreviousUntil = new(at(24 * time.Hour))
	create(t, s, a, b)
	if got := get(t, s, "alice", a.ID); !cmp.Equal(a.Handler, got.Handler) || !cmp.Equal(a.Secrets, got.Secrets) {
		t.Errorf("handler round trip mismatch (-want +got):\n%s%s", cmp.Diff(a.Handler, got.Handler), cmp.Diff(a.Secrets, got.Secrets))
	}
	ev, raw := newEvent(1, "test.created", "")
	publish(t, s, ev, raw, targets(a, b), at(time.Second))
	if err := s.SetHandler(t.Context(), "alice", a.ID, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SetHandler(t.Context(), "bob", b.ID, nil, nil); !errors.Is(err, subscriptions.ErrNotFound) {
		t.Errorf("SetHandler of another principal's subscription: %v, want ErrNotFound", err)
	}
	if got := get(t, s, "alice", a.ID); got.Handler != nil || got.HandlerStatus != nil {
		t.Errorf("removed handler still there: %+v %+v", got.Handler, got.HandlerStatus)
	}
	if got := dueJobs(t, s, at(time.Minute), 10); len(got) != 1 || got[0].SubscriptionID != b.ID {
		t.Fatalf("after removing a's handler, DueJobs = %+v; want b's job alone", got)
	}
	if err := s.DeleteSubscription(t.Context(), "alice", b.ID); err != nil {
		t.Fatal(err)
	}
	if got := dueJobs(t, s, at(time.Minute), 10); len(got) != 0 {
		t.Errorf("jobs of a deleted subscription remain: %+v", got)
	}
	if _, ok, err := s.NextJobDue(t.Context(), subscriptions.JobQuery{}); err != nil || ok {
		t.Errorf("NextJobDue = %v, %v; want none", ok, err)
	}
}

// testJobsSurvivePrune checks that retention keeps the deliveries (and so
// the events) of jobs not yet done.
func testJobsSurvivePrune(t *testing.T, open Opener) {
	s := open(t)
	sub := withHandler(newSub(1, "alice"))
	create(t, s, sub)
	ev, raw := newEvent(1, "test.created", "")
	publish(t, s, ev, raw, targets(sub), at(0))
	r := subscriptions.Retention{InboxMaxEntries: 1, InboxMaxAge: time.Minute, DedupWindow: time.Minute}
	if _, err := s.Prune(t.Context(), r, at(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got := dueJobs(t, s, at(time.Hour), 10)
	if len(got) != 1 || string(got[0].Event) != string(raw) {
		t.Fatalf("after retention, DueJobs = %+v; want the job with its event", got)
	}
	finish(t, s, subscriptions.JobDone{JobID: got[0].JobID, SubscriptionID: sub.ID, At: at(time.Hour)})
	if _, err := s.Prune(t.Context(), r, at(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if entries, _, err := s.ReadInbox(t.Context(), "alice", 0, 10); err != nil || len(entries) != 0 {
		t.Errorf("a delivery whose job is done was kept: %+v, %v", entries, err)
	}
}

// runsOf names each run by its principal and the number of its event.
func runsOf(t *testing.T, jobs []*subscriptions.Invocation) []string {
	t.Helper()
	out := make([]string, len(jobs))
	for i, j := range jobs {
		var ev struct {
			Data struct{ N int }
		}
		if err := json.Unmarshal(j.Event, &ev); err != nil {
			t.Fatalf("job %s: %v", j.JobID, err)
		}
		out[i] = fmt.Sprintf("%s/%d", j.Principal, ev.Data.N)
	}
	return out
}

// testDueJobsTakeTurns checks that principals take turns in DueJobs, those
// with fewer jobs in flight first, so that one principal's backlog of old
// jobs cannot crowd out another's, and that a principal gets no more than
// its room (JobQuery.PerPrincipal less its jobs in flight), NextJobDue
// leaving out a principal with none.
func testDueJobsTakeTurns(t *testing.T, open Opener) {
	s := open(t)
	mallory, alice, bob := withHandler(newSub(1, "mallory")), withHandler(newSub(2, "alice")), withHandler(newSub(3, "bob"))
	create(t, s, mallory, alice, bob)
	for i := 1; i <= 30; i++ {
		ev, raw := newEvent(i, "test.created", "")
		publish(t, s, ev, raw, targets(mallory), at(time.Duration(i)*time.Second))
	}
	for i, sub := range []*subscriptions.Subscription{alice, bob, bob} {
		ev, raw := newEvent(40+i, "test.created", "")
		publish(t, s, ev, raw, targets(sub), at(time.Duration(40+i)*time.Second))
	}
	now := at(time.Hour)
	due := func(limit int, q subscriptions.JobQuery) []*subscriptions.Invocation {
		t.Helper()
		jobs, err := s.DueJobs(t.Context(), now, limit, q)
		if err != nil {
			t.Fatalf("DueJobs: %v", err)
		}
		return jobs
	}
	all := due(100, subscriptions.JobQuery{})
	if len(all) != 33 {
		t.Fatalf("DueJobs returned %d jobs, want 33", len(all))
	}
	mine := func(principal string) []string {
		var ids []string
		for _, j := range all {
			if j.Principal == principal {
				ids = append(ids, j.JobID)
			}
		}
		return ids
	}

	tests := []struct {
		name  string
		limit int
		q     subscriptions.JobQuery
		want  []string
	}{
		{"turns", 5, subscriptions.JobQuery{},
			[]string{"mallory/1", "alice/40", "bob/41", "mallory/2", "bob/42"}},
		{"share", 10, subscriptions.JobQuery{PerPrincipal: 3, InFlight: map[string]int{"mallory": 1}},
			[]string{"alice/40", "bob/41", "mallory/1", "bob/42", "mallory/2"}},
		{"share with jobs taken", 10, subscriptions.JobQuery{PerPrincipal: 3, InFlight: map[string]int{"mallory": 1, "bob": 1},
			Skip: []string{mine("mallory")[0], mine("bob")[0]}},
			[]string{"alice/40", "mallory/2", "bob/42", "mallory/3"}},
		{"fewest in flight first", 2, subscriptions.JobQuery{InFlight: map[string]int{"mallory": 20, "alice": 1}},
			[]string{"bob/41", "alice/40"}},
		{"backlog at its share", 1, subscriptions.JobQuery{PerPrincipal: 3, InFlight: map[string]int{"mallory": 3}, Skip: mine("mallory")[:3]},
			[]string{"alice/40"}},
		{"all at their share", 10, subscriptions.JobQuery{PerPrincipal: 1, InFlight: map[string]int{"mallory": 1, "alice": 1, "bob": 1}}, nil},
	}
	for _, tt := range tests {
		got := runsOf(t, due(tt.limit, tt.q))
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: DueJobs mismatch (-want +got):\n%s", tt.name, diff)
		}
	}

	next := func(q subscriptions.JobQuery) string {
		t.Helper()
		when, ok, err := s.NextJobDue(t.Context(), q)
		if err != nil {
			t.Fatalf("NextJobDue: %v", err)
		}
		if !ok {
			return "none"
		}
		return when.Sub(t0).String()
	}
	for _, tt := range []struct {
		name string
		q    subscriptions.JobQuery
		want string
	}{
		{"any", subscriptions.JobQuery{}, "1s"},
		{"first taken", subscriptions.JobQuery{Skip: mine("mallory")[:1]}, "2s"},
		{"backlog at its share", subscriptions.JobQuery{PerPrincipal: 3, InFlight: map[string]int{"mallory": 3}}, "40s"},
		{"all at their share", subscriptions.JobQuery{PerPrincipal: 3, InFlight: map[string]int{"mallory": 3, "alice": 3, "bob": 3}}, "none"},
	} {
		if got := next(tt.q); got != tt.want {
			t.Errorf("%s: NextJobDue = %s, want %s", tt.name, got, tt.want)
		}
	}
}
