package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// hangingHandler blocks the runs of one principal until released, and
// reports every run that starts.
type hangingHandler struct {
	hung    string        // the principal whose runs hang
	release chan struct{} // closed to let them end
	started chan *subscriptions.Invocation

	mu             sync.Mutex
	running, most  int // hung runs in progress, and the most at once
	hungRuns, runs int
}

func newHangingHandler(principal string) *hangingHandler {
	return &hangingHandler{hung: principal, release: make(chan struct{}), started: make(chan *subscriptions.Invocation, 1000)}
}

func (h *hangingHandler) Check(context.Context, string, *mcpe.HandlerSpec) error { return nil }

func (h *hangingHandler) Handle(ctx context.Context, inv *subscriptions.Invocation) subscriptions.Outcome {
	h.started <- inv
	if inv.Principal != h.hung {
		return subscriptions.Outcome{Output: "ok"}
	}
	h.mu.Lock()
	h.running++
	h.most = max(h.most, h.running)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.running--
		h.mu.Unlock()
	}()
	select {
	case <-h.release:
		return subscriptions.Outcome{Output: "ok"}
	case <-ctx.Done():
		return subscriptions.Outcome{Err: ctx.Err()}
	}
}

// next returns the next run to start, failing the test after 10 s.
func (h *hangingHandler) next(t *testing.T, what string) *subscriptions.Invocation {
	t.Helper()
	select {
	case inv := <-h.started:
		return inv
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not start within 10 s", what)
		return nil
	}
}

func (e *env) subscribeAs(t *testing.T, principal, types string) *subscriptions.Subscription {
	t.Helper()
	sub, err := e.svc.Subscribe(t.Context(), principal, mcpe.SubscribeRequest{
		Filter:  mcpe.Filter{EventTypes: []string{types}},
		Handler: &mcpe.HandlerSpec{Type: mcpe.HandlerBash, Command: "notify"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func (e *env) publishType(t *testing.T, typ, sourceID string) {
	t.Helper()
	if _, err := e.svc.Publish(t.Context(), mcpe.Event{Type: typ, Data: json.RawMessage(`{}`),
		Metadata: mcpe.Metadata{SourceEventID: sourceID}}); err != nil {
		t.Fatal(err)
	}
}

// TestHungPrincipalDoesNotDelayAnother is the reported fault: one
// principal's 40 runs that never end (webhooks to a receiver that never
// answers) held every worker, and another principal's run waited for them.
// Here mallory has 200 due jobs, more than the runner takes at once (128),
// so that her backlog would also fill what it reads from the store. Now
// mallory holds at most her share of the workers, and alice's run starts
// while all of mallory's still hang; once they end, mallory's backlog runs
// to the end.
func TestHungPrincipalDoesNotDelayAnother(t *testing.T) {
	clk := clocktest.NewFake(t0)
	h := newHangingHandler("mallory")
	e := newEnvWith(t, filepath.Join(t.TempDir(), "db"), clk, envOptions{
		kinds: map[mcpe.HandlerType]subscriptions.Handler{mcpe.HandlerBash: h},
	})
	hung := e.subscribeAs(t, "mallory", "mallory.*")
	e.subscribeAs(t, "alice", "alice.*")
	const backlog = 200
	for i := range backlog {
		e.publishType(t, "mallory.created", fmt.Sprint("m", i))
	}
	share := max(1, 32/4) // the default: a quarter of the default concurrency
	for i := range share {
		if inv := h.next(t, fmt.Sprintf("mallory's run %d", i+1)); inv.Principal != "mallory" {
			t.Fatalf("run of %s; only mallory has jobs", inv.Principal)
		}
	}

	e.publishType(t, "alice.created", "a")
	for {
		inv := h.next(t, "alice's run, while mallory's runs hang,")
		if inv.Principal == "alice" {
			break
		}
	}
	h.mu.Lock()
	most := h.most
	h.mu.Unlock()
	if most > share {
		t.Errorf("mallory had %d runs at once; want at most %d", most, share)
	}

	close(h.release)
	st := e.statusOf(t, "mallory", hung.ID, func(s mcpe.HandlerStatus) bool { return s.Succeeded == backlog })
	if st.Pending != 0 || st.Failed != 0 {
		t.Errorf("mallory's handler status %+v; want all %d succeeded", st, backlog)
	}
}
