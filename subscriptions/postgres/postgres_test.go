package postgres_test

import (
	"encoding/json"
	"fmt"
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

var t0 = time.Date(2025, time.January, 15, 10, 30, 0, 0, time.UTC)

// newSub returns an active realtime subscription n of principal.
func newSub(n int, principal string) *subscriptions.Subscription {
	return &subscriptions.Subscription{
		Principal: principal,
		Subscription: mcpe.Subscription{
			ID:        fmt.Sprintf("00000000-0000-4000-8000-%012d", n),
			Status:    mcpe.StatusActive,
			Filter:    mcpe.Filter{EventTypes: []string{"test.*"}},
			Delivery:  mcpe.DefaultDelivery(),
			CreatedAt: t0,
			UpdatedAt: t0,
		},
	}
}

// newEvent returns event n and its JSON form.
func newEvent(n int) (*mcpe.Event, json.RawMessage) {
	ev := &mcpe.Event{
		ID:       fmt.Sprintf("00000000-0000-4000-9000-%012d", n),
		Type:     "test.created",
		Data:     json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)),
		Metadata: mcpe.Metadata{Timestamp: t0, Priority: mcpe.PriorityNormal},
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return ev, raw
}

// TestOpenMigratesOnce opens one database from several goroutines at once,
// as replicas starting together would: all succeed, the migrations are
// recorded once, and what one stores the others read.
func TestOpenMigratesOnce(t *testing.T) {
	url := pgtest.Database(t)
	const replicas = 4
	stores := make([]*postgres.Store, replicas)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), url)
			if err != nil {
				t.Errorf("Open %d: %v", i, err)
				return
			}
			t.Cleanup(func() { s.Close() })
			stores[i] = s
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n, distinct int
	if err := conn.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n == 0 || n != distinct {
		t.Errorf("schema_migrations has %d rows for %d versions; want each version once", n, distinct)
	}
	sub := newSub(1, "alice")
	if err := stores[0].CreateSubscription(t.Context(), sub, 10); err != nil {
		t.Fatal(err)
	}
	for i, s := range stores {
		if _, err := s.GetSubscription(t.Context(), "alice", sub.ID); err != nil {
			t.Errorf("store %d: GetSubscription: %v", i, err)
		}
	}
	// Opening again applies nothing and keeps the data.
	s := open(t, url)
	if _, err := s.GetSubscription(t.Context(), "alice", sub.ID); err != nil {
		t.Errorf("after reopening: GetSubscription: %v", err)
	}
}

// TestCursorNeverSkips has several writers publish to one principal while
// a reader follows its inbox by cursor, as events_poll does: the reader
// must get every entry, in increasing order, although the writers'
// transactions overlap. Were sequence numbers drawn before the
// principal's row is held, an entry could commit after one with a higher
// number that the reader had already passed.
func TestCursorNeverSkips(t *testing.T) {
	s := open(t, pgtest.Database(t))
	sub := newSub(1, "alice")
	if err := s.CreateSubscription(t.Context(), sub, 10); err != nil {
		t.Fatal(err)
	}
	targets := []subscriptions.Target{{SubscriptionID: sub.ID, Principal: "alice", Channel: mcpe.ChannelRealtime}}
	const writers, each = 4, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				ev, raw := newEvent(1 + w*each + i)
				if _, err := storetest.PublishOne(t.Context(), s, ev, raw, targets, t0); err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var cursor int64
	seen := 0
	read := func() {
		for {
			entries, more, err := s.ReadInbox(t.Context(), "alice", cursor, 7)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Seq <= cursor {
					t.Fatalf("entry %d after cursor %d", e.Seq, cursor)
				}
				cursor = e.Seq
				seen++
			}
			if !more {
				return
			}
		}
	}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		read()
	}
	read()
	if seen != writers*each {
		t.Errorf("the reader got %d entries by cursor; want %d (some committed behind it)", seen, writers*each)
	}
}

// TestOpenRefusesOtherValues checks the errors of values that are no
// PostgreSQL URL.
func TestOpenRefusesOtherValues(t *testing.T) {
	for _, v := range []string{"", "/var/lib/mcpe/events.db", "mysql://u@h/db"} {
		if _, err := postgres.Open(t.Context(), v); err == nil || !strings.Contains(err.Error(), "postgres://") {
			t.Errorf("Open(%q) = %v; want an error saying a postgres:// URL is wanted", v, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db":                "postgres://u:xxxxx@h:5432/db",
		"postgres://u@h/db":                        "postgres://u@h/db",
		"postgresql://h/db?password=pw&sslmode=on": "postgresql://h/db?password=xxxxx&sslmode=on",
	} {
		if got := postgres.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsURL(t *testing.T) {
	for in, want := range map[string]bool{
		"postgres://u@h/db":   true,
		"postgresql://u@h/db": true,
		"POSTGRES://h/db":     true,
		"/tmp/postgres.db":    false,
		":memory:":            false,
		"postgres.db":         false,
	} {
		if got := postgres.IsURL(in); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", in, got, want)
		}
	}
}
