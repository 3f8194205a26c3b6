package subscriptions_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// heldExpiry is a store whose NextExpiry, once held is set, stops after
// reading until the test lets it go: the moment between an arm's read and
// its timer change.
type heldExpiry struct {
	*sqlite.Store
	held    atomic.Bool
	read    chan struct{}
	release chan struct{}
}

func (h *heldExpiry) NextExpiry(ctx context.Context) (time.Time, bool, error) {
	t, ok, err := h.Store.NextExpiry(ctx)
	if h.held.CompareAndSwap(true, false) {
		close(h.read)
		<-h.release
	}
	return t, ok, err
}

// TestExpiryArmedDuringAnExpiryIsKept checks that a subscription given an
// expiry while the expiry timer re-arms after firing still expires: the
// re-arm read the store before it was written, and must not replace its
// timer with that stale reading.
func TestExpiryArmedDuringAnExpiryIsKept(t *testing.T) {
	store, err := sqlite.Open(context.Background(), subscriptionsMemory)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h := &heldExpiry{Store: store, read: make(chan struct{}), release: make(chan struct{})}
	clk := clocktest.NewFake(svcStart)
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{Store: h, Deliverer: &recorder{}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	subscribeExpiring := func(in time.Duration) (*subscriptions.Subscription, error) {
		req := every("x")
		req.ExpiresAt = clk.Now().Add(in).Format(time.RFC3339)
		return svc.Subscribe(context.Background(), "alice", req)
	}
	if _, err := subscribeExpiring(time.Hour); err != nil {
		t.Fatal(err)
	}

	// The first expires; its re-arm reads "nothing to expire" and waits.
	h.held.Store(true)
	fired := make(chan struct{})
	go func() { clk.Advance(time.Hour); close(fired) }()
	<-h.read
	// Meanwhile a subscription with an expiry is made.
	type made struct {
		sub *subscriptions.Subscription
		err error
	}
	second := make(chan made, 1)
	go func() {
		sub, err := subscribeExpiring(time.Hour)
		second <- made{sub, err}
	}()
	// Let it arm its timer, when nothing holds it back (it can take no
	// longer than a write to an in-memory database).
	var m made
	select {
	case m = <-second:
	case <-time.After(500 * time.Millisecond):
	}
	close(h.release)
	<-fired
	if m.sub == nil {
		m = <-second
	}
	if m.err != nil {
		t.Fatal(m.err)
	}
	clk.Advance(time.Hour)
	got, err := svc.Get(context.Background(), "alice", m.sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != mcpe.StatusExpired {
		t.Errorf("status an hour after its expiry = %q; want %q", got.Status, mcpe.StatusExpired)
	}
}
