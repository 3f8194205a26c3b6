package postgres_test

import (
	"context"
	"fmt"
	neturl "net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/internal/pgtest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/postgres"
	"github.com/mcpe-server/mcpe-server/subscriptions/storetest"
)

// TestWatermarkUnderConcurrency has writers publish, each to a principal
// of its own, through two stores on one database, while a follower does
// what subscriptions.Service does on a shared store: read the principals'
// Heads, read InboxRange from each one's watermark through its head, and
// move the watermarks to the heads. It must see every
// entry exactly once. Were the entries numbered by a sequence, in the
// order numbers are drawn rather than committed, an entry could commit
// below a head the follower had already passed, and be lost to it.
func TestWatermarkUnderConcurrency(t *testing.T) {
	url := pgtest.Database(t)
	stores := []*postgres.Store{openWith(t, url, 8), openWith(t, url, 8)}
	const writers, each = 8, 60
	principals := make([]string, writers)
	targets := make([][]subscriptions.Target, writers)
	for w := range writers {
		principals[w] = fmt.Sprintf("principal-%d", w)
		sub := newSub(w+1, principals[w])
		if err := stores[0].CreateSubscription(t.Context(), sub, 10); err != nil {
			t.Fatal(err)
		}
		targets[w] = []subscriptions.Target{{SubscriptionID: sub.ID, Principal: principals[w], Channel: mcpe.ChannelRealtime}}
	}
	marks, _, err := stores[1].Heads(t.Context(), principals)
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			s := stores[w%2]
			for i := range each {
				ev, raw := newEvent(1 + w*each + i)
				if _, err := storetest.PublishOne(t.Context(), s, ev, raw, targets[w], t0); err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	type key struct {
		principal string
		seq       int64
	}
	seen := make(map[key]int)
	follow := func(s *postgres.Store) {
		heads, _, err := s.Heads(t.Context(), principals)
		if err != nil {
			t.Fatal(err)
		}
		var spans []subscriptions.InboxSpan
		for _, p := range principals {
			if heads[p] < marks[p] {
				t.Fatalf("Heads of %s went back from %d to %d", p, marks[p], heads[p])
			}
			spans = append(spans, subscriptions.InboxSpan{Principal: p, After: marks[p], Through: heads[p]})
		}
		for {
			entries, more, err := s.InboxRange(t.Context(), spans, 16)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				i := slices.Index(principals, e.Principal)
				if e.Seq <= spans[i].After || e.Seq > spans[i].Through {
					t.Fatalf("InboxRange(after %d, through %d) returned entry %d of %s", spans[i].After, spans[i].Through, e.Seq, e.Principal)
				}
				seen[key{e.Principal, e.Seq}]++
				spans[i].After = e.Seq
			}
			if !more || len(entries) == 0 {
				break
			}
		}
		marks = heads
	}
	rounds := 0
	for finished := false; !finished; rounds++ {
		select {
		case <-done:
			finished = true
		default:
		}
		follow(stores[rounds%2])
	}
	follow(stores[0])
	if t.Failed() {
		return
	}

	for k, n := range seen {
		if n != 1 {
			t.Errorf("entry %d of %s seen %d times", k.seq, k.principal, n)
		}
	}
	missed := 0
	for _, p := range principals {
		entries, _, err := stores[0].ReadInbox(t.Context(), p, 0, writers*each)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if seen[key{p, e.Seq}] == 0 {
				missed++
			}
		}
	}
	if missed > 0 || len(seen) != writers*each {
		t.Errorf("the follower saw %d entries in %d rounds and missed %d; want all %d, each once (entries committed below a head it had passed)",
			len(seen), rounds, missed, writers*each)
	}
	t.Logf("%d entries followed in %d rounds", len(seen), rounds)
}

// TestChangesWatermarkUnderConcurrency does the same for subscription
// changes: writers create, pause and delete subscriptions of principals of
// their own through two stores while a follower reads Heads and
// ChangedSubscriptions from its watermark; it must learn of every
// subscription's last state.
func TestChangesWatermarkUnderConcurrency(t *testing.T) {
	url := pgtest.Database(t)
	stores := []*postgres.Store{openWith(t, url, 8), openWith(t, url, 8)}
	const writers, each = 6, 20
	_, last, err := stores[0].Heads(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			s := stores[w%2]
			for i := range each {
				sub := newSub(1+w*each+i, fmt.Sprintf("principal-%d", w))
				if err := s.CreateSubscription(t.Context(), sub, 1000); err != nil {
					t.Errorf("CreateSubscription: %v", err)
					return
				}
				switch i % 3 {
				case 1:
					sub.Status = mcpe.StatusPaused
					if err := s.UpdateSubscription(t.Context(), sub); err != nil {
						t.Errorf("UpdateSubscription: %v", err)
						return
					}
				case 2:
					if err := s.DeleteSubscription(t.Context(), sub.Principal, sub.ID); err != nil {
						t.Errorf("DeleteSubscription: %v", err)
						return
					}
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	state := make(map[string]*subscriptions.Subscription)
	follow := func(s *postgres.Store) {
		_, head, err := s.Heads(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		changes, complete, err := s.ChangedSubscriptions(t.Context(), last, head)
		if err != nil || !complete {
			t.Fatalf("ChangedSubscriptions = %v, complete %v", err, complete)
		}
		for _, c := range changes {
			state[c.SubscriptionID] = c.Subscription
		}
		last = head
	}
	for finished, i := false, 0; !finished; i++ {
		select {
		case <-done:
			finished = true
		default:
		}
		follow(stores[i%2])
	}
	follow(stores[1])
	if t.Failed() {
		return
	}
	for w := range writers {
		for i := range each {
			id := newSub(1+w*each+i, "").ID
			sub, ok := state[id]
			want := []string{"active", "paused", "deleted"}[i%3]
			got := "never seen"
			switch {
			case ok && sub == nil:
				got = "deleted"
			case ok:
				got = string(sub.Status)
			}
			if got != want {
				t.Errorf("subscription %s: the follower last saw it %s; want %s", id, got, want)
			}
		}
	}
}

// TestChangesPruned checks that a process that has not read the
// subscription changes retention removed is told to reload.
func TestChangesPruned(t *testing.T) {
	url := pgtest.Database(t)
	s := open(t, url)
	ctx := t.Context()
	if err := s.CreateSubscription(ctx, newSub(1, "alice"), 10); err != nil {
		t.Fatal(err)
	}
	_, head, err := s.Heads(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, complete, err := s.ChangedSubscriptions(ctx, 0, head); err != nil || !complete {
		t.Fatalf("before retention: complete %v, %v; want complete", complete, err)
	}
	// Recent changes stay.
	if _, err := s.Prune(ctx, subscriptions.Retention{}, t0); err != nil {
		t.Fatal(err)
	}
	if changes, complete, err := s.ChangedSubscriptions(ctx, 0, head); err != nil || !complete || len(changes) != 1 {
		t.Fatalf("after retention of recent changes: %d changes, complete %v, %v; want the one, complete", len(changes), complete, err)
	}
	// Dated past what retention keeps, by the clock the triggers use.
	exec(t, url, `UPDATE subscription_changes SET changed_at = now() - interval '1 minute' - $1::bigint * interval '1 millisecond'`,
		postgres.ChangesKept.Milliseconds())
	if _, err := s.Prune(ctx, subscriptions.Retention{}, t0); err != nil {
		t.Fatal(err)
	}
	if _, complete, err := s.ChangedSubscriptions(ctx, 0, head); err != nil || complete {
		t.Errorf("after retention removed the change: complete %v, %v; want incomplete", complete, err)
	}
	if changes, complete, err := s.ChangedSubscriptions(ctx, head, head); err != nil || !complete || len(changes) != 0 {
		t.Errorf("from the head: %+v, complete %v, %v; want nothing, complete", changes, complete, err)
	}
	// Numbers go on from the head after the rows went.
	if err := s.CreateSubscription(ctx, newSub(2, "alice"), 10); err != nil {
		t.Fatal(err)
	}
	_, next, err := s.Heads(ctx, nil)
	if err != nil || next != head+1 {
		t.Fatalf("Heads changes = %d, %v; want %d", next, err, head+1)
	}
	if changes, complete, err := s.ChangedSubscriptions(ctx, head, next); err != nil || !complete || len(changes) != 1 {
		t.Errorf("the new change: %+v, complete %v, %v; want it, complete", changes, complete, err)
	}
}

// TestHealth checks that Health reports a database that stops accepting
// connections, and that it recovers.
func TestHealth(t *testing.T) {
	url := pgtest.Database(t)
	s, err := postgres.OpenWith(t.Context(), url, &postgres.Options{HealthEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	admin := u.String()
	wait := func(want bool) error {
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := s.Health()
			if (err != nil) == want || time.Now().After(deadline) {
				return err
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := wait(false); err != nil {
		t.Fatalf("Health of a database that answers = %v", err)
	}
	// Connections refused, and those open ended.
	exec(t, admin, `ALTER DATABASE `+pgx.Identifier{name}.Sanitize()+` ALLOW_CONNECTIONS false`)
	exec(t, admin, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name)
	err = wait(true)
	if err == nil || !strings.Contains(err.Error(), "SELECT 1") {
		t.Fatalf("Health of a database that refuses connections = %v; want an error", err)
	}
	t.Logf("Health: %v", err)
	start := time.Now()
	_ = s.Health()
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("Health took %v; want it at once", d)
	}
	exec(t, admin, `ALTER DATABASE `+pgx.Identifier{name}.Sanitize()+` ALLOW_CONNECTIONS true`)
	if err := wait(false); err != nil {
		t.Errorf("Health once the database accepts connections again = %v", err)
	}
}

// openWith opens the database at url with a pool of conns connections and
// closes it when t ends.
func openWith(t *testing.T, url string, conns int32) *postgres.Store {
	t.Helper()
	s, err := postgres.OpenWith(t.Context(), url, &postgres.Options{MaxConns: conns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// exec runs one statement on the database at url.
func exec(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestMigrationKeepsNumbering applies migration 0002 to a database of the
// first schema with entries in it: the inbox numbers go on from where its
// sequence was, and the store gets an ID.
func TestMigrationKeepsNumbering(t *testing.T) {
	url := pgtest.Database(t)
	first, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	exec(t, url, string(first))
	exec(t, url, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now());
		INSERT INTO schema_migrations (version, name) VALUES (1, '0001_init.sql')`)
	// Entries 1 to 3 were written, and 3 pruned.
	exec(t, url, `INSERT INTO inbox (seq, principal, subscription_ids, kind, created_at)
		SELECT nextval('inbox_seq'), 'alice', ARRAY['x'], 'event', now() FROM generate_series(1, 3)`)
	exec(t, url, `DELETE FROM inbox WHERE seq = 3`)
	exec(t, url, `INSERT INTO principals (principal) VALUES ('bob')`)
	s := open(t, url)
	inbox, changes, err := s.Heads(t.Context(), []string{"alice"})
	if err != nil || inbox["alice"] != 3 || changes != 0 {
		t.Fatalf("Heads = %v, %d, %v; want alice 3, 0", inbox, changes, err)
	}
	if id, err := s.StoreID(t.Context()); err != nil || len(id) != 32 {
		t.Errorf("StoreID = %q, %v; want 32 hex digits", id, err)
	}
	sub := newSub(1, "alice")
	if err := s.CreateSubscription(t.Context(), sub, 10); err != nil {
		t.Fatal(err)
	}
	ev, raw := newEvent(1)
	res, err := storetest.PublishOne(t.Context(), s, ev, raw,
		[]subscriptions.Target{{SubscriptionID: sub.ID, Principal: "alice", Channel: mcpe.ChannelRealtime}}, t0)
	if err != nil || len(res.Delivered) != 1 || res.Delivered[0].Seq != 4 {
		t.Fatalf("Publish = %+v, %v; want entry 4", res, err)
	}
	// Numbered per principal from there on (migration 0009): bob, whose
	// row was there before, and alice again once deleted and back, go on
	// above every number given.
	for i, want := range []int64{4, 5} {
		principal := []string{"bob", "alice"}[i]
		if principal == "alice" {
			if err := s.DeletePrincipal(t.Context(), "alice"); err != nil {
				t.Fatal(err)
			}
		}
		sub := newSub(2+i, principal)
		if err := s.CreateSubscription(t.Context(), sub, 10); err != nil {
			t.Fatal(err)
		}
		ev, raw := newEvent(2 + i)
		res, err := storetest.PublishOne(t.Context(), s, ev, raw,
			[]subscriptions.Target{{SubscriptionID: sub.ID, Principal: principal, Channel: mcpe.ChannelRealtime}}, t0)
		if err != nil || len(res.Delivered) != 1 || res.Delivered[0].Seq != want {
			t.Fatalf("Publish to %s = %+v, %v; want entry %d", principal, res, err, want)
		}
	}
}

// TestWrittenNotifies checks that a store hears at once of what another
// store on the database committed, and not of its own commits, and that it
// listens again once its connection is cut.
func TestWrittenNotifies(t *testing.T) {
	url := pgtest.Database(t)
	a, b := openWith(t, url, 4), openWith(t, url, 4)
	written := b.Written()
	// The wake that follows LISTEN taking effect.
	expectWake := func(what string) {
		t.Helper()
		select {
		case <-written:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no notification within 10 s", what)
		}
	}
	expectWake("listening")
	sub := newSub(1, "alice")
	if err := a.CreateSubscription(t.Context(), sub, 10); err != nil {
		t.Fatal(err)
	}
	expectWake("a subscription created by another store")
	target := []subscriptions.Target{{SubscriptionID: sub.ID, Principal: "alice", Channel: mcpe.ChannelRealtime}}
	ev, raw := newEvent(1)
	if _, err := storetest.PublishOne(t.Context(), a, ev, raw, target, t0); err != nil {
		t.Fatal(err)
	}
	expectWake("an event published by another store")

	// Once b watches alice only, an event for bob published by another
	// store does not wake it; one for alice still does, and so does a
	// subscription change, whoever owns it.
	b.Watch([]string{"alice"})
	// b's listening connection leaves the other inbox channels (alice's
	// is mcpe_inbox_63): the database does not even send it what is
	// written for bob. (pg_stat_activity shows the statement's first
	// kilobyte only.)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for i := 0; ; i++ {
		var left bool
		if err := conn.QueryRow(t.Context(), `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE query LIKE 'UNLISTEN mcpe_inbox_00; UNLISTEN mcpe_inbox_01; %'`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left {
			break
		} else if i == 500 {
			t.Fatal("the listening connection did not leave the inbox channels of the principals not watched")
		}
		time.Sleep(10 * time.Millisecond)
	}
	bobSub := newSub(2, "bob")
	if err := a.CreateSubscription(t.Context(), bobSub, 10); err != nil {
		t.Fatal(err)
	}
	expectWake("a subscription of a principal not watched, created by another store")
	ev, raw = newEvent(4)
	if _, err := storetest.PublishOne(t.Context(), a, ev, raw,
		[]subscriptions.Target{{SubscriptionID: bobSub.ID, Principal: "bob", Channel: mcpe.ChannelRealtime}}, t0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-written:
		t.Fatal("the store was woken for an inbox entry of a principal it does not watch")
	case <-time.After(300 * time.Millisecond):
	}
	ev, raw = newEvent(5)
	if _, err := storetest.PublishOne(t.Context(), a, ev, raw, target, t0); err != nil {
		t.Fatal(err)
	}
	expectWake("an event of a watched principal published by another store")

	ev, raw = newEvent(2)
	if _, err := storetest.PublishOne(t.Context(), b, ev, raw, target, t0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-written:
		t.Fatal("the store was told of its own commit")
	case <-time.After(300 * time.Millisecond):
	}

	// Cut every listening connection: the store listens again.
	exec(t, url, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND query LIKE '%LISTEN %'`)
	expectWake("listening again")
	ev, raw = newEvent(3)
	if _, err := storetest.PublishOne(t.Context(), a, ev, raw, target, t0); err != nil {
		t.Fatal(err)
	}
	expectWake("an event published after the connection was made again")
}

// TestPrincipalsCommitApart checks that the inbox of one principal is
// numbered without waiting for another's: while a transaction holds
// alice's counter (as a publish to her does until it commits), a publish
// to bob through another store commits, and one to alice waits. A store
// whose publish waited takes the rows first in its next, and adds to it
// what PublishBatch.More gives, until one to which nothing was added.
func TestPrincipalsCommitApart(t *testing.T) {
	url := pgtest.Database(t)
	a, b := openWith(t, url, 4), openWith(t, url, 4)
	var targets [2][]subscriptions.Target
	for i, p := range []string{"alice", "bob"} {
		sub := newSub(i+1, p)
		if err := a.CreateSubscription(t.Context(), sub, 10); err != nil {
			t.Fatal(err)
		}
		targets[i] = []subscriptions.Target{{SubscriptionID: sub.ID, Principal: p, Channel: mcpe.ChannelRealtime}}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// publish publishes event id to alice through s, with more.
	publish := func(s *postgres.Store, id int, more func([]string) []subscriptions.Publication) ([]subscriptions.PublishResult, error) {
		routed, err := s.Deactivations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ev, raw := newEvent(id)
		return s.Publish(ctx, subscriptions.PublishBatch{Now: t0, Deactivations: routed, More: more,
			Publications: []subscriptions.Publication{{Event: ev, Raw: raw, Targets: targets[0]}}})
	}
	if _, err := publish(a, 1, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	watch, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(context.Background())
	// behind runs f while a transaction holds alice's counter, and returns
	// once f is seen waiting for it and it is free again.
	behind := func(f func() error) error {
		tx, err := conn.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(t.Context(), `UPDATE principals SET inbox_seq = inbox_seq + 1 WHERE principal = 'alice'`); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- f() }()
		for waiting := false; !waiting; {
			if err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
				t.Fatalf("no publish to alice was seen waiting for her row: %v", err)
			}
			select {
			case err := <-done:
				t.Fatalf("a publish to alice ended (%v) while her counter was held", err)
			default:
			}
		}
		time.Sleep(2 * postgres.GatherAfter) // a wait the store counts as one
		if err := tx.Rollback(t.Context()); err != nil {
			t.Fatal(err)
		}
		return <-done
	}

	ev, raw := newEvent(2)
	var res subscriptions.PublishResult
	if err := behind(func() (err error) {
		// Bob's commits while alice's counter is held; alice's waits.
		if bob, err := storetest.PublishOne(ctx, b, ev, raw, targets[1], t0); err != nil || len(bob.Delivered) != 1 {
			return fmt.Errorf("publish to bob = %+v, %v; want it committed", bob, err)
		}
		ev, raw := newEvent(3)
		res, err = storetest.PublishOne(ctx, b, ev, raw, targets[0], t0)
		return err
	}); err != nil || len(res.Delivered) != 1 || res.Delivered[0].Seq != 2 {
		t.Fatalf("publish to alice once her counter is free = %+v, %v; want her entry 2", res, err)
	}

	// Having waited, b's next publish takes alice's row first, then adds
	// what More gives to the same transaction, after its own.
	var locked []string
	joined, joinedRaw := newEvent(5)
	var got []subscriptions.PublishResult
	err = behind(func() (err error) {
		got, err = publish(b, 4, func(l []string) []subscriptions.Publication {
			locked = l
			return []subscriptions.Publication{{Event: joined, Raw: joinedRaw, Targets: targets[0]}}
		})
		return err
	})
	if err != nil || len(got) != 2 || got[1].EventID != joined.ID || len(got[1].Delivered) != 1 ||
		got[0].Delivered[0].Seq != 3 || got[1].Delivered[0].Seq != 4 {
		t.Fatalf("publish after waiting = %+v, %v; want its event and the one that joined as alice's entries 3 and 4", got, err)
	}
	if !slices.Equal(locked, []string{"alice"}) {
		t.Fatalf("More was given %q, want the rows taken: [alice]", locked)
	}
	// It waited again: the next gathers too, but nothing comes.
	called := 0
	none := func([]string) []subscriptions.Publication { called++; return nil }
	if err := behind(func() error { _, err := publish(b, 6, none); return err }); err != nil || called != 1 {
		t.Fatalf("publish after a wait gathering nothing: %v, More called %d times; want once", err, called)
	}
	// Then neither b, to which nothing came, nor a store whose publishes
	// never waited, gathers.
	for i, s := range []*postgres.Store{b, openWith(t, url, 4)} {
		if _, err := publish(s, 7+i, none); err != nil || called != 1 {
			t.Fatalf("publish %d: %v, More called %d times more; want none", i, err, called-1)
		}
	}

	// A server stalled between its two round trips holds alice's row only
	// until the database ends its idle transaction (the URL's setting
	// here; 10 s unless it says): another's publish to her goes through.
	sep := map[bool]string{true: "&", false: "?"}[strings.Contains(url, "?")]
	c := openWith(t, url+sep+"idle_in_transaction_session_timeout=200ms", 4)
	if err := behind(func() error { _, err := publish(c, 9, nil); return err }); err != nil {
		t.Fatal(err)
	}
	through := make(chan error, 1)
	publish(c, 10, func([]string) []subscriptions.Publication {
		go func() { _, err := publish(a, 11, nil); through <- err }()
		if err := <-through; err != nil {
			t.Errorf("publish to alice while a server holding her row stalls: %v", err)
		}
		return nil
	})
}

// TestPublishToAPrincipalWithoutRow: a publish in one round trip takes the
// rows its principals have and makes none. Should a target's principal
// have no row (its subscriptions and row go together, so this is a guard),
// the entries must still be written, numbered after those the principal
// had, not dropped by a numbering that found no row.
func TestPublishToAPrincipalWithoutRow(t *testing.T) {
	url := pgtest.Database(t)
	s := openWith(t, url, 4)
	sub := newSub(1, "alice")
	if err := s.CreateSubscription(t.Context(), sub, 10); err != nil {
		t.Fatal(err)
	}
	targets := []subscriptions.Target{{SubscriptionID: sub.ID, Principal: "alice", Channel: mcpe.ChannelRealtime}}
	for n := 1; n <= 2; n++ {
		if n == 2 {
			db, err := pgx.Connect(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			_, err = db.Exec(t.Context(), `DELETE FROM principals WHERE principal = 'alice'`)
			db.Close(t.Context())
			if err != nil {
				t.Fatal(err)
			}
		}
		ev, raw := newEvent(n)
		res, err := storetest.PublishOne(t.Context(), s, ev, raw, targets, t0)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Delivered) != 1 || res.Delivered[0].Seq != int64(n) {
			t.Fatalf("publish %d delivered %+v, want alice's entry %d", n, res.Delivered, n)
		}
	}
	entries, _, err := s.ReadInbox(t.Context(), "alice", 0, 10)
	if err != nil || len(entries) != 2 {
		t.Fatalf("alice's inbox: %d entries, %v; want 2", len(entries), err)
	}
}
