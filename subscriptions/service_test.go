package subscriptions_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/delivery"
	"github.com/mcpe-server/mcpe-server/delivery/cron"
	"github.com/mcpe-server/mcpe-server/delivery/scheduled"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
	"github.com/mcpe-server/mcpe-server/subscriptions/storetest"
)

var svcStart = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// recorder is a Deliverer that keeps what it is given.
type recorder struct {
	mu      sync.Mutex
	entries []subscriptions.InboxEntry
}

func (r *recorder) Deliver(es []subscriptions.InboxEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, es...)
}

// Replay keeps entries as Deliver does.
func (r *recorder) Replay(_ string, entries []subscriptions.InboxEntry) { r.Deliver(entries) }

// delivered lists "principal subscriptionID" for each event delivered.
func (r *recorder) delivered() []string { return r.of(mcpe.InboxEvent) }

// expired lists "principal subscriptionID" for each expiry notice.
func (r *recorder) expired() []string { return r.of(mcpe.InboxExpired) }

func (r *recorder) of(kind mcpe.InboxKind) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.entries {
		if e.Kind != kind {
			continue
		}
		for _, id := range e.SubscriptionIDs {
			out = append(out, e.Principal+" "+id)
		}
	}
	return out
}

type fixture struct {
	t          *testing.T
	store      *sqlite.Store
	clock      *clocktest.Fake
	rec        *recorder
	svc        *subscriptions.Service
	schedulers delivery.Schedulers
}

func newFixture(t *testing.T, path string, clk *clocktest.Fake, opts subscriptions.ServiceOptions) *fixture {
	t.Helper()
	store, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	opts.Store = store
	opts.Clock = clk
	opts.Deliverer = rec
	svc, err := subscriptions.NewService(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	schedOpts := &delivery.SchedulerOptions{Clock: clk}
	windows, err := delivery.NewScheduler(subscriptions.Windows, svc, schedOpts)
	if err != nil {
		t.Fatal(err)
	}
	schedulers := delivery.Schedulers{cron.NewScheduler(svc, schedOpts), scheduled.NewScheduler(svc, schedOpts), windows}
	for _, s := range schedulers {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{t: t, store: store, clock: clk, rec: rec, svc: svc, schedulers: schedulers}
	t.Cleanup(f.stop)
	return f
}

func (f *fixture) stop() {
	f.schedulers.Stop()
	f.svc.Stop()
	f.store.Close()
}

func (f *fixture) subscribe(principal string, req mcpe.SubscribeRequest) *subscriptions.Subscription {
	f.t.Helper()
	sub, err := f.svc.Subscribe(context.Background(), principal, req)
	if err != nil {
		f.t.Fatal(err)
	}
	return sub
}

func (f *fixture) publish(typ string) subscriptions.PublishResult {
	f.t.Helper()
	res, err := f.svc.Publish(context.Background(), mcpe.Event{Type: typ, Data: json.RawMessage(`{}`)})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func every(types ...string) mcpe.SubscribeRequest {
	return mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: types}}
}

func TestStartExpiresWhatPassedWhileDown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	clk := clocktest.NewFake(svcStart)
	f := newFixture(t, path, clk, subscriptions.ServiceOptions{})
	req := every("x")
	req.ExpiresAt = svcStart.Add(time.Hour).Format(time.RFC3339)
	sub := f.subscribe("alice", req)
	kept := f.subscribe("alice", every("x"))
	f.stop()

	// The server was down when the subscription expired.
	clk2 := clocktest.NewFake(svcStart.Add(2 * time.Hour))
	f2 := newFixture(t, path, clk2, subscriptions.ServiceOptions{})
	got, err := f2.svc.Get(context.Background(), "alice", sub.ID)
	if err != nil || got.Status != mcpe.StatusExpired {
		t.Fatalf("after start: %+v, %v; want it expired", got, err)
	}
	if diff := cmp.Diff([]string{"alice " + sub.ID}, f2.rec.expired()); diff != "" {
		t.Errorf("notifications mismatch (-want +got):\n%s", diff)
	}
	f2.publish("x")
	if diff := cmp.Diff([]string{"alice " + kept.ID}, f2.rec.delivered()); diff != "" {
		t.Errorf("deliveries after start mismatch (-want +got):\n%s", diff)
	}
	poll, err := f2.svc.Poll(context.Background(), "alice", mcpe.PollRequest{})
	if err != nil || len(poll.Items) != 2 || poll.Items[0].Kind != mcpe.InboxExpired {
		t.Fatalf("inbox = %+v, %v; want the expiry notice then the event", poll.Items, err)
	}
}

func TestStartDeletesSessionScopedPrincipals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	clk := clocktest.NewFake(svcStart)
	opts := subscriptions.ServiceOptions{EphemeralPrefix: "session:"}
	f := newFixture(t, path, clk, opts)
	f.subscribe("session:abc", every("x"))
	local := f.subscribe("local", every("x"))
	f.stop()

	f2 := newFixture(t, path, clk, opts)
	f2.publish("x")
	if diff := cmp.Diff([]string{"local " + local.ID}, f2.rec.delivered()); diff != "" {
		t.Errorf("deliveries mismatch (-want +got):\n%s", diff)
	}
	subs, err := f2.store.ListSubscriptions(context.Background(), subscriptions.ListQuery{})
	if err != nil || len(subs) != 1 || subs[0].ID != local.ID {
		t.Fatalf("stored subscriptions = %+v, %v; want only local's", subs, err)
	}
}

// TestStartKeepsSessionScopedPrincipalsOfOthers starts a second server on
// the database of a running one: the first one's live session keeps its
// subscription, which the second routes events to as well.
func TestStartKeepsSessionScopedPrincipalsOfOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	clk := clocktest.NewFake(svcStart)
	opts := subscriptions.ServiceOptions{EphemeralPrefix: "session:"}
	f := newFixture(t, path, clk, opts)
	sub := f.subscribe("session:abc", every("x"))

	f2 := newFixture(t, path, clk, opts)
	subs, err := f2.store.ListSubscriptions(context.Background(), subscriptions.ListQuery{})
	if err != nil || len(subs) != 1 || subs[0].ID != sub.ID {
		t.Fatalf("stored subscriptions after a second server started = %+v, %v; want the live session's", subs, err)
	}
	f2.publish("x")
	if diff := cmp.Diff([]string{"session:abc " + sub.ID}, f2.rec.delivered()); diff != "" {
		t.Errorf("deliveries by the second server mismatch (-want +got):\n%s", diff)
	}
}

func TestForgetPrincipal(t *testing.T) {
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	f.subscribe("session:abc", every("x"))
	other := f.subscribe("bob", every("x"))
	if err := f.svc.ForgetPrincipal(context.Background(), "session:abc"); err != nil {
		t.Fatal(err)
	}
	f.publish("x")
	if diff := cmp.Diff([]string{"bob " + other.ID}, f.rec.delivered()); diff != "" {
		t.Errorf("deliveries mismatch (-want +got):\n%s", diff)
	}
	if subs, _ := f.svc.List(context.Background(), "session:abc", ""); len(subs) != 0 {
		t.Errorf("forgotten principal still has %+v", subs)
	}
}

const subscriptionsMemory = sqlite.Memory

func TestRetentionRunsOnItsTimer(t *testing.T) {
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{
		Retention:     subscriptions.Retention{InboxMaxEntries: 2},
		PruneInterval: time.Minute,
	})
	sub := f.subscribe("alice", every("x"))
	for range 5 {
		f.publish("x")
	}
	read := func() int {
		entries, _, err := f.store.ReadInbox(context.Background(), "alice", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	if n := read(); n != 5 {
		t.Fatalf("inbox has %d entries before the timer, want 5", n)
	}
	f.clock.Advance(time.Minute)
	if n := read(); n != 2 {
		t.Fatalf("inbox has %d entries after the timer, want 2", n)
	}
	got, _ := f.svc.Get(context.Background(), "alice", sub.ID)
	if got.DeliveredCount != 5 {
		t.Errorf("deliveredCount = %d after pruning, want 5", got.DeliveredCount)
	}
}

func TestDuplicateIsNotDeliveredAgain(t *testing.T) {
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	f.subscribe("alice", every("x"))
	ev := mcpe.Event{Type: "x", Data: json.RawMessage(`{}`), Metadata: mcpe.Metadata{SourceEventID: "s1"}}
	first, err := f.svc.Publish(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.svc.Publish(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Duplicate || second.EventID != first.EventID || len(second.Delivered) != 0 {
		t.Errorf("second publish = %+v; want a duplicate of %s with no deliveries", second, first.EventID)
	}
	if n := len(f.rec.delivered()); n != 1 {
		t.Errorf("delivered %d times, want once", n)
	}
}

func TestUpdateMovesTheExpiryTimer(t *testing.T) {
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	req := every("x")
	req.ExpiresAt = svcStart.Add(time.Hour).Format(time.RFC3339)
	sub := f.subscribe("alice", req)
	later := svcStart.Add(3 * time.Hour).Format(time.RFC3339)
	if _, err := f.svc.Update(context.Background(), "alice", mcpe.UpdateRequest{
		SubscriptionID: sub.ID, ExpiresAt: mcpe.OptionalString{Set: true, Value: later},
	}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Hour)
	if got := f.rec.expired(); len(got) != 0 {
		t.Fatalf("expired at the old time: %v", got)
	}
	f.clock.Advance(time.Hour)
	if diff := cmp.Diff([]string{"alice " + sub.ID}, f.rec.expired()); diff != "" {
		t.Errorf("notifications mismatch (-want +got):\n%s", diff)
	}
}

func TestStopIsIdempotentAndStopsTimers(t *testing.T) {
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	req := every("x")
	req.ExpiresAt = svcStart.Add(time.Hour).Format(time.RFC3339)
	f.subscribe("alice", req)
	f.svc.Stop()
	f.svc.Stop()
	f.clock.Advance(2 * time.Hour) // no timer runs against the stopped service
	if got := f.rec.expired(); len(got) != 0 {
		t.Errorf("notified after Stop: %v", got)
	}
}

func TestNewServiceOptionErrors(t *testing.T) {
	store, err := sqlite.Open(context.Background(), sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rec := &recorder{}
	for _, tc := range []struct {
		opts subscriptions.ServiceOptions
		want string
	}{
		{subscriptions.ServiceOptions{Deliverer: rec}, "ServiceOptions.Store is required"},
		{subscriptions.ServiceOptions{Store: store}, "ServiceOptions.Deliverer is required"},
		{subscriptions.ServiceOptions{Store: store, Deliverer: rec, MaxSubscriptions: -1}, "MaxSubscriptions is -1"},
		{subscriptions.ServiceOptions{Store: store, Deliverer: rec, Timings: map[mcpe.Channel]subscriptions.Timing{"realtime": nil}}, `Timings has "realtime"`},
	} {
		if _, err := subscriptions.NewService(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewService: %v; want an error containing %q", err, tc.want)
		}
	}
}

// gatedStore parks the next Publish until released.
type gatedStore struct {
	subscriptions.Store
	armed            atomic.Bool
	entered, release chan struct{}
}

func (g *gatedStore) Publish(ctx context.Context, b subscriptions.PublishBatch) ([]subscriptions.PublishResult, error) {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.Store.Publish(ctx, b)
}

// TestPauseWaitsForInFlightPublish checks that a pause does not return
// while an event matched before it is still being stored, and that the
// event, stored after the pause was, is not delivered to the paused
// subscription: once Pause has returned, it receives nothing.
func TestPauseWaitsForInFlightPublish(t *testing.T) {
	store, err := sqlite.Open(context.Background(), sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gated := &gatedStore{Store: store, entered: make(chan struct{}), release: make(chan struct{})}
	rec := &recorder{}
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{
		Store:     gated,
		Deliverer: rec,
		Clock:     clocktest.NewFake(svcStart),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	sub, err := svc.Subscribe(context.Background(), "alice", every("x"))
	if err != nil {
		t.Fatal(err)
	}

	gated.armed.Store(true)
	published := make(chan error, 1)
	go func() {
		_, err := svc.Publish(context.Background(), mcpe.Event{Type: "x", Data: json.RawMessage(`{}`)})
		published <- err
	}()
	<-gated.entered // matched, not yet stored
	paused := make(chan error, 1)
	go func() {
		_, err := svc.Pause(context.Background(), "alice", sub.ID)
		paused <- err
	}()
	select {
	case err := <-paused:
		t.Fatalf("Pause returned (%v) while an event matched before it was still being stored", err)
	case <-time.After(100 * time.Millisecond):
		// Pause is waiting, as it must; a regression usually shows well
		// within this wait, and a slow machine can only hide it, never fail
		// a correct build.
	}
	close(gated.release)
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	if err := <-paused; err != nil {
		t.Fatal(err)
	}
	got, err := svc.Get(context.Background(), "alice", sub.ID)
	if err != nil || got.DeliveredCount != 0 || got.Status != mcpe.StatusPaused {
		t.Fatalf("after both: %+v, %v; want paused, the event stored after the pause not delivered to it", got, err)
	}
}

// TestPublishDoesNotHoldWritersWhileMatching checks that changing
// subscriptions does not wait for an event whose new type is being matched,
// and that the event is then not stored for a subscription paused
// meanwhile.
func TestPublishDoesNotHoldWritersWhileMatching(t *testing.T) {
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	a := f.subscribe("alice", every("svc.*"))
	kept := f.subscribe("alice", every("svc.created"))
	matching, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	subscriptions.SetBeforeMatch(f.svc, func() {
		once.Do(func() {
			close(matching)
			<-release
		})
	})
	published := make(chan error, 1)
	go func() {
		_, err := f.svc.Publish(context.Background(), mcpe.Event{Type: "svc.created"})
		published <- err
	}()
	<-matching
	changed := make(chan error, 1)
	go func() {
		_, err := f.svc.Pause(context.Background(), "alice", a.ID)
		changed <- err
	}()
	select {
	case err := <-changed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Pause waited for an event being matched")
	}
	close(release)
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alice " + kept.ID}, f.rec.delivered()); diff != "" {
		t.Errorf("deliveries mismatch (-want +got):\n%s", diff)
	}
}

func TestPatternCostBudget(t *testing.T) {
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{MaxPatternCost: 10})
	ctx := context.Background()
	// "a.*" costs 2, "{a,b}.*.x" 2 × 2 = 4.
	first := f.subscribe("alice", every("a.*", "{a,b}.*.x")) // 6
	if _, err := f.svc.Subscribe(ctx, "alice", every("b.*", "c.*", "d.*")); err == nil || !strings.Contains(err.Error(), "would cost 12") {
		t.Fatalf("over the budget: %v; want a refusal naming the cost 12", err)
	}
	f.subscribe("alice", every("b.*", "c.*"))      // 10
	f.subscribe("alice", every("exact.type"))      // exact types cost nothing
	f.subscribe("bob", every("a.*", "b.*", "c.*")) // each principal has its own budget
	// Replacing a filter counts the new patterns instead of the old ones.
	if _, err := f.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: first.ID, Filter: &mcpe.Filter{EventTypes: []string{"x.*", "y.*", "z.*"}}}); err != nil {
		t.Errorf("an update within the budget was refused: %v", err)
	}
	// A paused subscription's patterns are not matched; resuming counts
	// them again.
	if _, err := f.svc.Pause(ctx, "alice", first.ID); err != nil {
		t.Fatal(err)
	}
	f.subscribe("alice", every("p.*", "q.*", "r.*"))
	if _, err := f.svc.Resume(ctx, "alice", first.ID); err == nil || !strings.Contains(err.Error(), "over this server's limit of 10") {
		t.Errorf("resume over the budget: %v; want a refusal", err)
	}
}

// nested returns a JSON object nested depth levels deep.
func nested(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1))
}

// TestDataNestingBounded checks that an event nested deeper than the bound
// is refused, and that events_poll serves a deeper event stored earlier as
// a note instead of failing at its cursor.
func TestDataNestingBounded(t *testing.T) {
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	ctx := context.Background()
	sub := f.subscribe("alice", every("x"))
	if _, err := f.svc.Publish(ctx, mcpe.Event{Type: "x", Data: nested(mcpe.DefaultMaxDataDepth)}); err != nil {
		t.Fatalf("data at the bound: %v", err)
	}
	_, err := f.svc.Publish(ctx, mcpe.Event{Type: "x", Data: nested(mcpe.DefaultMaxDataDepth + 1)})
	var ie *mcpe.InvalidError
	if !errors.As(err, &ie) || ie.Field != "data" || !strings.Contains(err.Error(), "65 levels deep; this server accepts at most 64") {
		t.Fatalf("data past the bound: %v; want an *InvalidError for data", err)
	}
	// An event stored before the bound, as deep as the go-sdk refuses.
	deep := mcpe.Event{ID: "6ba7b810-9dad-11d1-80b4-00c04fd430c8", Type: "x", Data: nested(1000)}
	raw, _ := json.Marshal(deep)
	if _, err := storetest.PublishOne(ctx, f.store, &deep, raw, []subscriptions.Target{{SubscriptionID: sub.ID, Principal: "alice", Channel: mcpe.ChannelRealtime}}, svcStart); err != nil {
		t.Fatal(err)
	}
	f.publish("x")
	res, err := f.svc.Poll(ctx, "alice", mcpe.PollRequest{Cursor: "0"})
	if err != nil {
		t.Fatalf("poll over a too deep event: %v", err)
	}
	if len(res.Items) != 3 || res.Items[1].Event != nil || !strings.Contains(res.Items[1].Note, "1 event(s) of this delivery left out") || res.Items[2].Event == nil {
		t.Errorf("items = %+v; want the deep event left out with a note, between two served ones", res.Items)
	}
}

// TestPollPageBoundedInBytes checks that a page ends before its events pass
// mcpe.MaxPollBytes, and that digests of large events are cut to fit.
func TestPollPageBoundedInBytes(t *testing.T) {
	f, _ := newTimed(t, subscriptionsMemory, clocktest.NewFake(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)))
	ctx := context.Background()
	f.subscribe("alice", every("big"))
	digest := f.subscribe("alice", cronReq("@hourly", "", "big"))
	big := json.RawMessage(`{"blob":"` + strings.Repeat("x", 1<<20) + `"}`)
	for range 10 {
		if _, err := f.svc.Publish(ctx, mcpe.Event{Type: "big", Data: big}); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.Advance(time.Hour)
	var pages, items, batches int
	cursor := "0"
	for more := true; more; pages++ {
		res, err := f.svc.Poll(ctx, "alice", mcpe.PollRequest{Cursor: cursor, Limit: mcpe.MaxPollLimit})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		if len(b) > mcpe.MaxPollBytes {
			t.Fatalf("page %d is %d bytes, over %d", pages, len(b), mcpe.MaxPollBytes)
		}
		for _, it := range res.Items {
			items++
			if it.Kind == mcpe.InboxBatch {
				batches++
				if len(it.SubscriptionIDs) != 1 || it.SubscriptionIDs[0] != digest.ID {
					t.Errorf("batch for %v", it.SubscriptionIDs)
				}
			}
		}
		cursor, more = res.NextCursor, res.HasMore
	}
	// Ten realtime events, and the digest of ten cut into batches of at
	// most three.
	if items != 10+batches || batches < 4 || pages < 5 {
		t.Errorf("%d items in %d pages, %d of them batches; want 10 events and the digest in at least 4 batches, over at least 5 pages", items, pages, batches)
	}
}

// countingStore counts Store.Publish calls and the publications they carry.
type countingStore struct {
	gatedStore
	mu    sync.Mutex
	sizes []int
}

func (c *countingStore) Publish(ctx context.Context, b subscriptions.PublishBatch) ([]subscriptions.PublishResult, error) {
	c.mu.Lock()
	c.sizes = append(c.sizes, len(b.Publications))
	c.mu.Unlock()
	return c.gatedStore.Publish(ctx, b)
}

// memoryStore opens an in-memory SQLite store, closed when the test ends.
func memoryStore(t *testing.T) subscriptions.Store {
	t.Helper()
	store, err := sqlite.Open(context.Background(), sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// serviceOn starts a Service on store, delivering to d, stopped when the
// test ends.
func serviceOn(t *testing.T, store subscriptions.Store, d subscriptions.Deliverer) *subscriptions.Service {
	t.Helper()
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{Store: store, Deliverer: d, Clock: clocktest.NewFake(svcStart)})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	return svc
}

// TestLeaderYieldsOnlyAmongOthers checks when a publication that leads a
// batch alone yields first for others to join it: not for a publisher
// that has long been alone, again once one arrived during a commit, and
// what joins it during the yield is committed with it.
func TestLeaderYieldsOnlyAmongOthers(t *testing.T) {
	counting := &countingStore{gatedStore: gatedStore{Store: memoryStore(t), entered: make(chan struct{}), release: make(chan struct{})}}
	svc := serviceOn(t, counting, &recorder{})
	if _, err := svc.Subscribe(context.Background(), "alice", every("x")); err != nil {
		t.Fatal(err)
	}
	var yields atomic.Int32
	var join func()
	subscriptions.SetYield(svc, func() {
		yields.Add(1)
		if join != nil {
			join()
		}
	})
	publish := func() error {
		_, err := svc.Publish(context.Background(), mcpe.Event{Type: "x"})
		return err
	}
	waitQueued := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for subscriptions.Queued(svc) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d publications queued, want %d", subscriptions.Queued(svc), n)
			}
			time.Sleep(time.Millisecond)
		}
	}

	// One publisher alone: it yields at first, then no more.
	for range 100 {
		if err := publish(); err != nil {
			t.Fatal(err)
		}
	}
	lone := yields.Load()
	if lone == 0 {
		t.Fatal("a first publication did not yield")
	}
	for range 100 {
		if err := publish(); err != nil {
			t.Fatal(err)
		}
	}
	if got := yields.Load(); got != lone {
		t.Fatalf("%d yields after 100 more publications from one publisher, want none", got-lone)
	}

	// One arrives during a commit: leading its batch alone, it yields.
	counting.armed.Store(true)
	first := make(chan error, 1)
	go func() { first <- publish() }()
	<-counting.entered
	second := make(chan error, 1)
	go func() { second <- publish() }()
	waitQueued(1)
	// What arrives while it yields joins its batch.
	joined := make(chan error, 1)
	join = func() {
		join = nil
		go func() { joined <- publish() }()
		waitQueued(2)
	}
	close(counting.release)
	for _, c := range []chan error{first, second} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if got := yields.Load() - lone; got != 1 {
		t.Fatalf("%d yields for the publication that arrived during a commit, want 1", got)
	}
	if err := <-joined; err != nil {
		t.Fatal(err)
	}
	counting.mu.Lock()
	sizes := counting.sizes[len(counting.sizes)-2:]
	counting.mu.Unlock()
	if diff := cmp.Diff([]int{1, 2}, sizes); diff != "" {
		t.Errorf("last commits' sizes mismatch (-want +got):\n%s", diff)
	}
}

// TestConcurrentPublishesShareACommit checks group commit: events published
// while a commit is in progress are committed together in the next one,
// and each publisher gets its own result.
func TestConcurrentPublishesShareACommit(t *testing.T) {
	counting := &countingStore{gatedStore: gatedStore{Store: memoryStore(t), entered: make(chan struct{}), release: make(chan struct{})}}
	svc := serviceOn(t, counting, &recorder{})
	sub, err := svc.Subscribe(context.Background(), "alice", every("x"))
	if err != nil {
		t.Fatal(err)
	}
	counting.armed.Store(true)
	const n = 20
	ids := make(chan string, n+1)
	errs := make(chan error, n+1)
	publish := func() {
		res, err := svc.Publish(context.Background(), mcpe.Event{Type: "x"})
		ids <- res.EventID
		errs <- err
	}
	go publish()
	<-counting.entered // the first commit is in progress
	for range n {
		go publish()
	}
	// Every other publisher queues behind the commit in progress.
	deadline := time.Now().Add(10 * time.Second)
	for subscriptions.Queued(svc) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d publications queued, want %d", subscriptions.Queued(svc), n)
		}
		time.Sleep(time.Millisecond)
	}
	close(counting.release)
	seen := map[string]bool{}
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		seen[<-ids] = true
	}
	if len(seen) != n+1 {
		t.Errorf("%d distinct event IDs for %d publications", len(seen), n+1)
	}
	if diff := cmp.Diff([]int{1, n}, counting.sizes); diff != "" {
		t.Errorf("commits mismatch (-want +got):\n%s", diff)
	}
	got, err := svc.Get(context.Background(), "alice", sub.ID)
	if err != nil || got.DeliveredCount != n+1 {
		t.Errorf("delivered %d (%v), want %d", got.DeliveredCount, err, n+1)
	}
}

// joiningStore stands for a store that waits for its principals' rows:
// its next Publish, once released, adds what More gives for them.
type joiningStore struct {
	gatedStore
	sizes []int
}

func (j *joiningStore) Publish(ctx context.Context, b subscriptions.PublishBatch) ([]subscriptions.PublishResult, error) {
	if j.armed.CompareAndSwap(true, false) {
		close(j.entered)
		<-j.release
		var locked []string
		for _, p := range b.Publications {
			for _, t := range p.Targets {
				locked = append(locked, t.Principal)
			}
		}
		slices.Sort(locked)
		b.Publications = append(b.Publications, b.More(slices.Compact(locked))...)
	}
	j.sizes = append(j.sizes, len(b.Publications))
	return j.Store.Publish(ctx, b)
}

// TestQueuedJoinTheRowsTaken checks what a store waiting for its rows
// adds to its commit (PublishBatch.More): the publications queued
// meanwhile that write to those rows only and are not throttled, each
// publisher getting its own result; the others wait for the next commit.
func TestQueuedJoinTheRowsTaken(t *testing.T) {
	joining := &joiningStore{gatedStore: gatedStore{Store: memoryStore(t), entered: make(chan struct{}), release: make(chan struct{})}}
	svc := serviceOn(t, joining, &recorder{})
	for _, s := range []struct {
		principal string
		req       mcpe.SubscribeRequest
	}{{"alice", every("x")}, {"bob", every("y")}, {"alice", throttledReq("1m")}} {
		if _, err := svc.Subscribe(context.Background(), s.principal, s.req); err != nil {
			t.Fatal(err)
		}
	}
	type published struct {
		to  string // whose inbox the event reaches
		res subscriptions.PublishResult
		err error
	}
	results := make(chan published, 5)
	publish := func(typ, to string) {
		res, err := svc.Publish(context.Background(), mcpe.Event{Type: typ, Data: json.RawMessage(`{"repo": "r"}`)})
		results <- published{to, res, err}
	}
	joining.armed.Store(true)
	go publish("x", "alice")
	<-joining.entered // the first commit waits for alice's row
	go publish("x", "alice")
	go publish("y", "bob")
	go publish("ci.failed", "alice")
	go publish("x", "alice")
	deadline := time.Now().Add(10 * time.Second)
	for subscriptions.Queued(svc) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d publications queued, want 4", subscriptions.Queued(svc))
		}
		time.Sleep(time.Millisecond)
	}
	close(joining.release)
	for range 5 {
		p := <-results
		if p.err != nil || len(p.res.Delivered) != 1 || p.res.Delivered[0].Principal != p.to {
			t.Fatalf("publication for %s = %+v, %v; want its own entry in %s's inbox", p.to, p.res, p.err, p.to)
		}
	}
	// Alice's two that joined; bob's (another row) and the throttled one
	// next.
	if diff := cmp.Diff([]int{3, 2}, joining.sizes); diff != "" {
		t.Errorf("commits mismatch (-want +got):\n%s", diff)
	}
}

// TestSessionsShareOneQuota checks that the sessions without a token
// (EphemeralPrefix) have, together, as many active subscriptions as one
// principal may: that bounds how many subscriptions one event reaches,
// however many sessions there are. Changing an active one, or pausing one
// to make room, works; a principal with a token has its own quota.
func TestSessionsShareOneQuota(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{EphemeralPrefix: "session:", MaxSubscriptions: 3})
	a1, b := f.subscribe("session:a", every("x")), f.subscribe("session:b", every("x"))
	f.subscribe("session:a", every("y"))
	_, err := f.svc.Subscribe(ctx, "session:c", every("x"))
	var lim *subscriptions.LimitError
	if !errors.As(err, &lim) || !lim.Sessions || lim.Max != 3 || !strings.Contains(err.Error(), "auth.tokens") {
		t.Fatalf("a fourth subscription of the sessions: %v; want a LimitError for the sessions together", err)
	}
	f.subscribe("alice", every("x"))
	if _, err := f.svc.Update(ctx, "session:b", mcpe.UpdateRequest{SubscriptionID: b.ID, Filter: &mcpe.Filter{EventTypes: []string{"z"}}}); err != nil {
		t.Errorf("changing an active subscription at the bound: %v", err)
	}
	if _, err := f.svc.Pause(ctx, "session:a", a1.ID); err != nil {
		t.Fatal(err)
	}
	c := f.subscribe("session:c", every("x"))
	if _, err := f.svc.Resume(ctx, "session:a", a1.ID); !errors.As(err, &lim) {
		t.Errorf("resuming past the bound: %v; want a LimitError", err)
	}
	if err := f.svc.Unsubscribe(ctx, "session:c", c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Resume(ctx, "session:a", a1.ID); err != nil {
		t.Errorf("resuming once there is room: %v", err)
	}
}

// A subscription's times are kept to the millisecond: nanoseconds in every
// answer carry nothing a model needs.
func TestSubscriptionTimesToTheMillisecond(t *testing.T) {
	clk := clocktest.NewFake(svcStart.Add(123456789 * time.Nanosecond))
	f := newFixture(t, subscriptionsMemory, clk, subscriptions.ServiceOptions{})
	sub := f.subscribe("alice", every("x"))
	clk.Advance(time.Second + 987654321*time.Nanosecond)
	label := "renamed"
	updated, err := f.svc.Update(context.Background(), "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID, Label: &label})
	if err != nil {
		t.Fatal(err)
	}
	for what, at := range map[string]time.Time{"createdAt": sub.CreatedAt, "updatedAt": updated.UpdatedAt} {
		if at.Nanosecond()%int(time.Millisecond) != 0 {
			t.Errorf("%s = %s; want it to the millisecond", what, at.Format(time.RFC3339Nano))
		}
	}
}
