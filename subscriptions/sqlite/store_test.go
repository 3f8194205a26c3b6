package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
	"github.com/mcpe-server/mcpe-server/subscriptions/storetest"
)

func TestStore(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) subscriptions.Store {
			return open(t, filepath.Join(t.TempDir(), "x.db"))
		})
	})
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) subscriptions.Store {
			return open(t, sqlite.Memory)
		})
	})
}

// BenchmarkStore runs the store benchmarks (storetest.Bench) on a file
// database.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) subscriptions.Store { return open(b, filepath.Join(b.TempDir(), "bench.db")) })
}

// open opens the database at path and closes it when t ends.
func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// reopen closes s and opens path again.
func reopen(t *testing.T, s *sqlite.Store, path string) *sqlite.Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return open(t, path)
}

var t0 = time.Date(2025, time.January, 15, 10, 30, 0, 0, time.UTC)

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	s := open(t, path)
	ctx := t.Context()
	sub := &subscriptions.Subscription{
		Principal: "alice",
		Subscription: mcpe.Subscription{
			ID:        "00000000-0000-4000-8000-000000000001",
			Status:    mcpe.StatusActive,
			Filter:    mcpe.Filter{EventTypes: []string{"test.*"}, Tags: []string{"a"}},
			Delivery:  mcpe.DefaultDelivery(),
			CreatedAt: t0,
			UpdatedAt: t0,
			ExpiresAt: new(t0.Add(24 * time.Hour)),
		},
	}
	if err := s.CreateSubscription(ctx, sub.Clone(), 10); err != nil {
		t.Fatalf("CreateSubscription: %v", err)
	}
	ev := &mcpe.Event{
		ID:       "00000000-0000-4000-9000-000000000001",
		Type:     "test.created",
		Data:     json.RawMessage(`{"n":1}`),
		Metadata: mcpe.Metadata{SourceEventID: "src-1", Timestamp: t0, Priority: mcpe.PriorityNormal},
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	targets := []subscriptions.Target{{SubscriptionID: sub.ID, Principal: "alice", Channel: mcpe.ChannelRealtime}}
	res, err := storetest.PublishOne(ctx, s, ev, raw, targets, t0.Add(time.Hour))
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if err := s.SetPollCursor(ctx, "alice", res.Delivered[0].Seq); err != nil {
		t.Fatalf("SetPollCursor: %v", err)
	}
	wantSub, err := s.GetSubscription(ctx, "alice", sub.ID)
	if err != nil {
		t.Fatalf("GetSubscription: %v", err)
	}
	wantInbox, _, err := s.ReadInbox(ctx, "alice", 0, 100)
	if err != nil {
		t.Fatalf("ReadInbox: %v", err)
	}

	s = reopen(t, s, path)

	gotSub, err := s.GetSubscription(ctx, "alice", sub.ID)
	if err != nil {
		t.Fatalf("GetSubscription after reopening: %v", err)
	}
	if diff := cmp.Diff(wantSub, gotSub); diff != "" {
		t.Errorf("subscription after reopening mismatch (-want +got):\n%s", diff)
	}
	gotInbox, _, err := s.ReadInbox(ctx, "alice", 0, 100)
	if err != nil {
		t.Fatalf("ReadInbox after reopening: %v", err)
	}
	if diff := cmp.Diff(wantInbox, gotInbox); diff != "" {
		t.Errorf("inbox after reopening mismatch (-want +got):\n%s", diff)
	}
	if got, err := s.PollCursor(ctx, "alice"); err != nil || got != res.Delivered[0].Seq {
		t.Errorf("PollCursor after reopening = %d, %v; want %d", got, err, res.Delivered[0].Seq)
	}
	if next, ok, err := s.NextExpiry(ctx); err != nil || !ok || !next.Equal(*sub.ExpiresAt) {
		t.Errorf("NextExpiry after reopening = %v, %t, %v; want %v", next, ok, err, *sub.ExpiresAt)
	}
	again := *ev
	again.ID = "00000000-0000-4000-9000-000000000002"
	dup, err := storetest.PublishOne(ctx, s, &again, raw, targets, t0.Add(2*time.Hour))
	if err != nil || !dup.Duplicate || dup.EventID != ev.ID {
		t.Errorf("Publish of the same sourceEventId after reopening = %+v, %v; want a duplicate of %s", dup, err, ev.ID)
	}
}

// userVersion reads PRAGMA user_version of the database at path.
func userVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRowContext(t.Context(), "PRAGMA user_version").Scan(&v); err != nil {
		t.Fatalf("read user_version: %v", err)
	}
	return v
}

// migrationCount is the number of migrations this binary knows.
func migrationCount(t *testing.T) int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no migrations found: %v", err)
	}
	return len(names)
}

func TestMigrationsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	s := open(t, path)
	sub := &subscriptions.Subscription{
		Principal: "alice",
		Subscription: mcpe.Subscription{
			ID:        "00000000-0000-4000-8000-000000000001",
			Status:    mcpe.StatusActive,
			Filter:    mcpe.Filter{EventTypes: []string{"*"}},
			Delivery:  mcpe.DefaultDelivery(),
			CreatedAt: t0,
			UpdatedAt: t0,
		},
	}
	if err := s.CreateSubscription(t.Context(), sub.Clone(), 10); err != nil {
		t.Fatalf("CreateSubscription: %v", err)
	}
	for i := range 3 {
		s = reopen(t, s, path)
		if got, want := userVersion(t, path), migrationCount(t); got != want {
			t.Errorf("user_version after opening %d times = %d, want %d", i+2, got, want)
		}
		subs, err := s.ListSubscriptions(t.Context(), subscriptions.ListQuery{})
		if err != nil {
			t.Fatalf("ListSubscriptions: %v", err)
		}
		if diff := cmp.Diff([]*subscriptions.Subscription{sub}, subs); diff != "" {
			t.Errorf("subscriptions after opening %d times mismatch (-want +got):\n%s", i+2, diff)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	s := open(t, path)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	newer := migrationCount(t) + 1
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), "PRAGMA user_version = "+strconv.Itoa(newer)); err != nil {
		t.Fatalf("set user_version: %v", err)
	}
	db.Close()

	s, err = sqlite.Open(t.Context(), path)
	if err == nil {
		s.Close()
		t.Fatalf("Open of a database with schema version %d succeeded, want an error", newer)
	}
	want := "schema version " + strconv.Itoa(newer) + " is newer than this binary knows"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
		t.Errorf("Open error = %q, want it to name %q and say %q", err, path, want)
	}
	if got := userVersion(t, path); got != newer {
		t.Errorf("user_version after the refused Open = %d, want it left at %d", got, newer)
	}
}

func TestOpenCreatesDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "not", "yet", "x.db")
	open(t, path)
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database file: %v", err)
	}
}

// TestOpenPathWithURICharacters checks that characters with a meaning in
// SQLite URIs are taken literally in the path.
func TestOpenPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a b%20c#d?e=f", "x.db")
	s := open(t, path)
	if err := s.SetPollCursor(t.Context(), "alice", 7); err != nil {
		t.Fatalf("SetPollCursor: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file: %v", err)
	}
	s = reopen(t, s, path)
	if got, err := s.PollCursor(t.Context(), "alice"); err != nil || got != 7 {
		t.Errorf("PollCursor after reopening = %d, %v; want 7", got, err)
	}
}

func TestOpenEmptyPath(t *testing.T) {
	if s, err := sqlite.Open(t.Context(), ""); err == nil {
		s.Close()
		t.Error("Open(\"\") succeeded, want an error")
	}
}

// TestOpenFailureReturnsNoStore checks that a failed Open returns no store
// and leaves nothing open.
func TestOpenFailureReturnsNoStore(t *testing.T) {
	for _, path := range []string{sqlite.Memory, filepath.Join(t.TempDir(), "x.db")} {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		s, err := sqlite.Open(ctx, path)
		if err == nil || s != nil {
			t.Errorf("Open(%q) with a cancelled context = %v, %v; want nil and an error", path, s, err)
		}
	}
}

// TestCloseFoldsTheWAL checks that a closed database needs no -wal file.
// Commits do not checkpoint (a background checkpointer does); SQLite folds
// the WAL in when the last connection closes, so Close must close them all.
func TestCloseFoldsTheWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	sub := &subscriptions.Subscription{
		Principal: "alice",
		Subscription: mcpe.Subscription{
			ID:        "00000000-0000-4000-8000-000000000001",
			Status:    mcpe.StatusActive,
			Filter:    mcpe.Filter{EventTypes: []string{"*"}},
			Delivery:  mcpe.DefaultDelivery(),
			CreatedAt: t0,
			UpdatedAt: t0,
		},
	}
	if err := s.CreateSubscription(t.Context(), sub, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("after Close the WAL holds %d bytes; want it folded into the database", fi.Size())
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestMigrationFillsTheFireSchedule opens a database made by the first
// migration alone, with a cron and a realtime subscription in it, and checks
// that the second one records which channel fires each.
func TestMigrationFillsTheFireSchedule(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(filepath.Join("migrations", "0001_init.sql"))
	if err != nil {
		t.Fatal(err)
	}
	next := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for _, q := range []string{
		string(first),
		`PRAGMA user_version = 1`,
		fmt.Sprintf(`INSERT INTO subscriptions (id, principal, status, filter, delivery, created_at, updated_at, next_fire_at)
			VALUES ('c', 'alice', 'active', '{"eventTypes":["x"]}',
				'{"channels":["realtime","cron"],"cronSchedule":{"expression":"0 9 * * *"}}', 0, 0, %d),
			('r', 'alice', 'active', '{"eventTypes":["x"]}', '{"channels":["realtime"]}', 0, 0, NULL)`, next.UnixNano()),
	} {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%.40s: %v", q, err)
		}
	}
	db.Close()

	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	due, err := s.DueFires(t.Context(), mcpe.ChannelCron, next, 10)
	if err != nil || len(due) != 1 || due[0].SubscriptionID != "c" {
		t.Fatalf("DueFires after the migration = %+v, %v; want subscription c", due, err)
	}
	if at, ok, err := s.NextFire(t.Context(), mcpe.ChannelCron); err != nil || !ok || !at.Equal(next) {
		t.Errorf("NextFire = %v, %t, %v; want %v", at, ok, err, next)
	}
}

// TestMigrationGivesJobsTheirPrincipal checks that handler jobs written
// before handler_jobs had a principal column get their subscription's, so
// that the runner's share per principal counts them.
func TestMigrationGivesJobsTheirPrincipal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"0001_init.sql", "0002_fire_schedule.sql"} {
		body, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(t.Context(), string(body)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	const sub = "00000000-0000-4000-8000-000000000001"
	const ev = "00000000-0000-4000-9000-000000000001"
	for _, q := range []string{
		"PRAGMA user_version = 2",
		`INSERT INTO subscriptions (id, principal, status, filter, delivery, created_at, updated_at, handler, handler_secrets)
			VALUES ('` + sub + `', 'alice', 'active', '{"eventTypes":["*"]}', '{"channels":["realtime"]}', 0, 0,
			'{"type":"webhook","url":"https://hooks.example.com/"}', '{"current":"whsec_x"}')`,
		`INSERT INTO events (id, type, body, received_at) VALUES ('` + ev + `', 'test.created', '{"id":"` + ev + `"}', 0)`,
		`INSERT INTO inbox (principal, subscription_ids, kind, event_id, created_at) VALUES ('alice', '["` + sub + `"]', 'event', '` + ev + `', 0)`,
	} {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s := open(t, path)
	now := time.Unix(0, 0).Add(time.Minute)
	jobs, err := s.DueJobs(t.Context(), now, 10, subscriptions.JobQuery{PerPrincipal: 1})
	if err != nil || len(jobs) != 1 || jobs[0].Principal != "alice" {
		t.Fatalf("DueJobs after the migration = %+v, %v; want alice's job", jobs, err)
	}
	full := subscriptions.JobQuery{PerPrincipal: 1, InFlight: map[string]int{"alice": 1}}
	if jobs, err := s.DueJobs(t.Context(), now, 10, full); err != nil || len(jobs) != 0 {
		t.Errorf("DueJobs with alice at her share = %+v, %v; want none (the job counts as hers)", jobs, err)
	}
	if _, ok, err := s.NextJobDue(t.Context(), full); err != nil || ok {
		t.Errorf("NextJobDue with alice at her share = %v, %v; want none", ok, err)
	}
}

func TestSharedStore(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (a, b storetest.SharedStore) {
		path := filepath.Join(t.TempDir(), "x.db")
		return open(t, path), open(t, path)
	})
}

// TestChangesPruned checks that a process that has not read the
// subscription changes retention removed is told to reload.
func TestChangesPruned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	s := open(t, path)
	open(t, path) // another process: changes are logged
	ctx := t.Context()
	sub := &subscriptions.Subscription{Principal: "alice", Subscription: mcpe.Subscription{
		ID: "00000000-0000-4000-8000-000000000001", Status: mcpe.StatusActive,
		Filter: mcpe.Filter{EventTypes: []string{"test.*"}}, Delivery: mcpe.DefaultDelivery(), CreatedAt: t0, UpdatedAt: t0,
	}}
	if err := s.CreateSubscription(ctx, sub, 10); err != nil {
		t.Fatal(err)
	}
	_, head, err := s.Heads(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, complete, err := s.ChangedSubscriptions(ctx, 0, head); err != nil || !complete {
		t.Fatalf("before retention: complete %v, %v; want complete", complete, err)
	}
	// Dated past what retention keeps, by the clock the triggers use.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	old := time.Now().Add(-sqlite.ChangesKept - time.Minute).UnixMilli()
	if _, err := db.ExecContext(ctx, `UPDATE subscription_changes SET changed_at = ?`, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(ctx, subscriptions.Retention{}, t0); err != nil {
		t.Fatal(err)
	}
	if _, complete, err := s.ChangedSubscriptions(ctx, 0, head); err != nil || complete {
		t.Errorf("after retention removed the change: complete %v, %v; want incomplete", complete, err)
	}
	if changes, complete, err := s.ChangedSubscriptions(ctx, head, head); err != nil || !complete || len(changes) != 0 {
		t.Errorf("from the head: %+v, complete %v, %v; want nothing, complete", changes, complete, err)
	}
}

// TestChangesLoggedOnceShared checks that a store alone logs no
// subscription changes, and that once another process opens the database
// both log them.
func TestChangesLoggedOnceShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	a := open(t, path)
	ctx := t.Context()
	sub := func(n int) *subscriptions.Subscription {
		return &subscriptions.Subscription{Principal: "alice", Subscription: mcpe.Subscription{
			ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n), Status: mcpe.StatusActive,
			Filter: mcpe.Filter{EventTypes: []string{"test.*"}}, Delivery: mcpe.DefaultDelivery(), CreatedAt: t0, UpdatedAt: t0,
		}}
	}
	if err := a.CreateSubscription(ctx, sub(1), 10); err != nil {
		t.Fatal(err)
	}
	if _, head, err := a.Heads(ctx, nil); err != nil || head != 0 {
		t.Fatalf("alone, the change log's head is %d (%v); want 0: nothing logged", head, err)
	}
	b := open(t, path)
	if err := a.CreateSubscription(ctx, sub(2), 10); err != nil {
		t.Fatal(err)
	}
	_, head, err := b.Heads(ctx, nil)
	if err != nil || head == 0 {
		t.Fatalf("shared, the change log's head is %d (%v); want the new subscription logged", head, err)
	}
	changes, complete, err := b.ChangedSubscriptions(ctx, 0, head)
	if err != nil || !complete || len(changes) != 1 || changes[0].SubscriptionID != sub(2).ID {
		t.Fatalf("changes = %+v, %v, %v; want the one made once shared", changes, complete, err)
	}
}

// TestMigrationNumbersTheInbox opens a database made by the migrations
// before 0009, whose inbox AUTOINCREMENT numbered, with its newest entries
// deleted: the entries there are kept as they were, and the store numbers
// new ones past every number given out, the deleted ones' too.
func TestMigrationNumbersTheInbox(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(names) < 9 {
		t.Fatalf("migrations: %v, %v", names, err)
	}
	for _, name := range names[:8] {
		body, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(t.Context(), string(body)); err != nil {
			t.Fatalf("apply %s: %v", name, err)
		}
	}
	for _, q := range []string{
		`PRAGMA user_version = 8`,
		`INSERT INTO inbox (principal, subscription_ids, kind, pending, created_at) VALUES
			('alice', '["s1"]', 'expired', 0, 1), ('alice', '["s1"]', 'expired', 1, 2), ('bob', '["s2"]', 'expired', 0, 3),
			('alice', '["s1"]', 'expired', 0, 4), ('alice', '["s1"]', 'expired', 0, 5)`,
		`DELETE FROM inbox WHERE seq > 3`,
	} {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s := open(t, path)
	got, _, err := s.ReadInbox(t.Context(), "alice", 0, 10)
	if err != nil {
		t.Fatalf("ReadInbox: %v", err)
	}
	var seqs []int64
	var pending []bool
	for _, e := range got {
		seqs, pending = append(seqs, e.Seq), append(pending, e.Pending)
	}
	if diff := cmp.Diff([]int64{1, 2}, seqs); diff != "" {
		t.Errorf("alice's entries after the migration (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, true}, pending); diff != "" {
		t.Errorf("pending after the migration (-want +got):\n%s", diff)
	}
	if inbox, _, err := s.Heads(t.Context(), nil); err != nil || inbox[""] != 5 {
		t.Errorf("Heads after the migration: inbox %v, %v; want 5, the last number AUTOINCREMENT gave", inbox, err)
	}

	sub := &subscriptions.Subscription{Principal: "alice", Subscription: mcpe.Subscription{
		ID: "00000000-0000-4000-8000-000000000001", Status: mcpe.StatusActive,
		Filter: mcpe.Filter{EventTypes: []string{"*"}}, Delivery: mcpe.DefaultDelivery(), CreatedAt: t0, UpdatedAt: t0,
	}}
	if err := s.CreateSubscription(t.Context(), sub, 10); err != nil {
		t.Fatalf("CreateSubscription: %v", err)
	}
	ev := &mcpe.Event{ID: "00000000-0000-4000-9000-000000000001", Type: "test.created", Data: json.RawMessage(`{}`),
		Metadata: mcpe.Metadata{Timestamp: t0, Priority: mcpe.PriorityNormal}}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	res, err := storetest.PublishOne(t.Context(), s, ev, raw,
		[]subscriptions.Target{{SubscriptionID: sub.ID, Principal: "alice", Channel: mcpe.ChannelRealtime}}, t0)
	if err != nil {
		t.Fatalf("Publish after the migration: %v", err)
	}
	if got := seqsOf(res.Delivered); !cmp.Equal(got, []int64{6}) {
		t.Fatalf("Publish after the migration numbered its entries %v; want [6]", got)
	}
	db = sqlDB(t, path)
	var triggers int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema
		WHERE type = 'trigger' AND tbl_name = 'inbox' AND name = 'inbox_handler_jobs'`).Scan(&triggers); err != nil || triggers != 1 {
		t.Errorf("the handler jobs' trigger on the inbox: %d, %v; want it back", triggers, err)
	}

	// A server from before the migration still running beside this one
	// lets SQLite number its entries, or numbers its digests from
	// sqlite_sequence (which counts the inbox no more): once the newest
	// entries are deleted, either would give a number again, and is refused.
	if err := s.DeletePrincipal(t.Context(), "alice"); err != nil {
		t.Fatalf("DeletePrincipal: %v", err)
	}
	for _, q := range []string{
		`INSERT INTO inbox (principal, subscription_ids, kind, created_at) VALUES ('carol', '[]', 'expired', 7)`,
		`INSERT INTO inbox (seq, principal, subscription_ids, kind, created_at) VALUES (1, 'carol', '[]', 'expired', 7)`,
	} {
		if _, err := db.ExecContext(t.Context(), q); err == nil || !strings.Contains(err.Error(), "same version") {
			t.Errorf("%s after the newest entries were deleted: %v; want it refused", q, err)
		}
	}
	sub.Principal, sub.ID = "carol", "00000000-0000-4000-8000-000000000002"
	if err := s.CreateSubscription(t.Context(), sub, 10); err != nil {
		t.Fatalf("CreateSubscription: %v", err)
	}
	ev.ID = "00000000-0000-4000-9000-000000000002"
	if raw, err = json.Marshal(ev); err != nil {
		t.Fatal(err)
	}
	res, err = storetest.PublishOne(t.Context(), s, ev, raw,
		[]subscriptions.Target{{SubscriptionID: sub.ID, Principal: "carol", Channel: mcpe.ChannelRealtime}}, t0)
	if err != nil {
		t.Fatalf("Publish after deleting the newest entries: %v", err)
	}
	if got := seqsOf(res.Delivered); !cmp.Equal(got, []int64{7}) {
		t.Errorf("Publish after deleting the newest entries numbered them %v; want [7]", got)
	}
}

func seqsOf(entries []subscriptions.InboxEntry) []int64 {
	var out []int64
	for _, e := range entries {
		out = append(out, e.Seq)
	}
	return out
}

// sqlDB opens the database at path beside the store, closed when t ends.
func sqlDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
