package handlers_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/internal/testhook"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// hookCall is a request a scripted receiver got.
type hookCall struct {
	Path      string
	ID        string
	Timestamp string
	// Verified says the signature matched the path's secret at the
	// request's own timestamp.
	Verified bool
}

// scriptedReceiver answers each path with its script of statuses in turn,
// the last one repeated, and verifies every signature.
type scriptedReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	script  map[string][]int
	secrets map[string]string
	calls   []hookCall
	hit     chan struct{}
}

func newScriptedReceiver(t *testing.T, script map[string][]int) *scriptedReceiver {
	r := &scriptedReceiver{script: script, secrets: map[string]string{}, hit: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		ts := req.Header.Get(webhook.HeaderTimestamp)
		unix, _ := strconv.ParseInt(ts, 10, 64)
		ok := webhook.Verify(r.secrets[req.URL.Path], req.Header, body, time.Unix(unix, 0)) == nil
		r.calls = append(r.calls, hookCall{req.URL.Path, req.Header.Get(webhook.HeaderID), ts, ok})
		statuses := r.script[req.URL.Path]
		status := http.StatusOK
		if len(statuses) > 0 {
			status = statuses[0]
			if len(statuses) > 1 {
				r.script[req.URL.Path] = statuses[1:]
			}
		}
		r.mu.Unlock()
		w.WriteHeader(status)
		r.hit <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *scriptedReceiver) setSecret(path, secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets[path] = secret
}

func (r *scriptedReceiver) got() []hookCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookCall(nil), r.calls...)
}

// waitCalls waits until the receiver got n requests in all. A retry timer
// the runner set just after the clock moved past it fires at the next move,
// so the clock is nudged (by zero) while waiting.
func (r *scriptedReceiver) waitCalls(t *testing.T, clk *clocktest.Fake, n int) []hookCall {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := r.got(); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got %d requests, want %d: %+v", len(r.got()), n, r.got())
		}
		clk.Advance(0)
		select {
		case <-r.hit:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// quiet checks that no request comes for a moment.
func (r *scriptedReceiver) quiet(t *testing.T, n int) {
	t.Helper()
	time.Sleep(50 * time.Millisecond)
	if got := r.got(); len(got) != n {
		t.Fatalf("the receiver got %d requests, want %d: %+v", len(got), n, got)
	}
}

// TestWebhookThroughRunner drives the real webhook sender through the runner
// and SQLite with a fake clock: each delivery is stored before its first
// attempt, retries follow the schedule with the same webhook-id, a retry
// pending at a restart is made by the next server, a 410 turns the handler
// off, and another 4xx is not retried forever.
func TestWebhookThroughRunner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	clk := clocktest.NewFake(t0)
	rcv := newScriptedReceiver(t, map[string][]int{
		"/retry": {503, 503, 200},
		"/gone":  {410},
		"/bad":   {400},
	})
	newSender := func() *webhook.Sender {
		s, err := webhook.New(&webhook.Options{
			AllowHTTP: true, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
			Clock: clk, Test: &testhook.Webhook{NoJitter: true}, // the default schedule, exactly
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	kinds := func() map[mcpe.HandlerType]subscriptions.Handler {
		return map[mcpe.HandlerType]subscriptions.Handler{mcpe.HandlerWebhook: newSender()}
	}
	e := newEnvWith(t, path, clk, envOptions{kinds: kinds(), stopped: true})
	subs := map[string]*subscriptions.Subscription{}
	for _, p := range []string{"/retry", "/gone", "/bad"} {
		sub, err := e.svc.Subscribe(t.Context(), "alice", mcpe.SubscribeRequest{
			Filter:  mcpe.Filter{EventTypes: []string{"test.*"}},
			Handler: &mcpe.HandlerSpec{Type: mcpe.HandlerWebhook, URL: rcv.URL + p},
		})
		if err != nil {
			t.Fatal(err)
		}
		rcv.setSecret(p, sub.Handler.Secret)
		subs[p] = sub
	}
	e.publish(t, "a")

	// Stored before the first attempt: pending, and nothing sent yet.
	for p, sub := range subs {
		if st := e.status(t, sub.ID, func(mcpe.HandlerStatus) bool { return true }); st.Pending != 1 || st.LastRunAt != nil {
			t.Errorf("%s before the runner starts: %+v; want one delivery pending, none attempted", p, st)
		}
	}
	if n := len(rcv.got()); n != 0 {
		t.Fatalf("the receiver got %d requests before the runner started", n)
	}

	// Attempt 1, at t0.
	if err := e.runner.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	rcv.waitCalls(t, clk, 3)
	st := e.status(t, subs["/gone"].ID, func(s mcpe.HandlerStatus) bool { return s.Disabled != "" })
	if st.Failed != 1 || st.Pending != 0 || !strings.Contains(st.Disabled, "410 Gone") {
		t.Errorf("/gone after a 410: %+v; want the handler off, 1 failed", st)
	}
	for _, p := range []string{"/retry", "/bad"} {
		st := e.status(t, subs[p].ID, func(s mcpe.HandlerStatus) bool { return s.LastRunAt != nil })
		if st.Pending != 1 || st.Failed != 0 || st.LastError == "" {
			t.Errorf("%s after attempt 1: %+v; want a retry pending and the error shown", p, st)
		}
	}

	// Attempt 2, 5 s later (not before).
	clk.Advance(4 * time.Second)
	rcv.quiet(t, 3)
	clk.Advance(time.Second)
	rcv.waitCalls(t, clk, 5)
	st = e.status(t, subs["/bad"].ID, func(s mcpe.HandlerStatus) bool { return s.Failed == 1 })
	if st.Pending != 0 || !strings.Contains(st.LastError, "gave up after 2 attempts") {
		t.Errorf("/bad after a second 400: %+v; want it failed for good after 2 attempts", st)
	}
	e.status(t, subs["/retry"].ID, func(s mcpe.HandlerStatus) bool {
		return s.LastRunAt != nil && s.LastRunAt.Equal(t0.Add(5*time.Second))
	})

	// A restart with the retry pending: the next server makes attempt 3,
	// 30 s after attempt 2.
	e.stop()
	e2 := newEnvWith(t, path, clk, envOptions{kinds: kinds()})
	clk.Advance(29 * time.Second)
	rcv.quiet(t, 5)
	clk.Advance(time.Second)
	rcv.waitCalls(t, clk, 6)
	st = e2.status(t, subs["/retry"].ID, func(s mcpe.HandlerStatus) bool { return s.Succeeded == 1 })
	if st.Failed != 0 || st.Pending != 0 {
		t.Errorf("/retry after attempt 3: %+v; want 1 succeeded, nothing failed or pending", st)
	}

	// A handler turned off gets nothing more; the others get the new event.
	e2.publish(t, "b")
	rcv.waitCalls(t, clk, 8)
	rcv.quiet(t, 8)

	// Per receiver path, in order: the same webhook-id on every attempt
	// of a delivery, a new one for the next delivery, each signed at the
	// time of its attempt.
	type attempt struct {
		Delivery  int // 1 for the first event, 2 for the second
		Timestamp string
		Verified  bool
	}
	got := map[string][]attempt{}
	ids := map[string][]string{} // path -> webhook-ids, by delivery
	for _, c := range rcv.got() {
		n := slices.Index(ids[c.Path], c.ID) + 1
		if n == 0 {
			ids[c.Path] = append(ids[c.Path], c.ID)
			n = len(ids[c.Path])
		}
		got[c.Path] = append(got[c.Path], attempt{n, c.Timestamp, c.Verified})
	}
	ts := func(d time.Duration) string { return strconv.FormatInt(t0.Add(d).Unix(), 10) }
	want := map[string][]attempt{
		"/retry": {{1, ts(0), true}, {1, ts(5 * time.Second), true}, {1, ts(35 * time.Second), true}, {2, ts(35 * time.Second), true}},
		"/gone":  {{1, ts(0), true}},
		"/bad":   {{1, ts(0), true}, {1, ts(5 * time.Second), true}, {2, ts(35 * time.Second), true}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests by path mismatch (-want +got):\n%s", diff)
	}
	for p, list := range ids {
		for _, id := range list {
			if !strings.HasPrefix(id, "msg_") {
				t.Errorf("%s: webhook-id %q", p, id)
			}
		}
	}
}
