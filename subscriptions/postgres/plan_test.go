package postgres

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/internal/pgtest"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// TestInboxRangeReadsItsSpansOnly: a follower reads the spans of the
// principals whose sessions it holds; the read must go to those spans in
// the inbox's (principal, seq) key, whatever else the inbox holds. Read
// through the other principals' entries, it costs in proportion to the
// whole inbox, at every look of every server.
func TestInboxRangeReadsItsSpansOnly(t *testing.T) {
	s, err := Open(t.Context(), pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const busy = 20_000
	if _, err := s.pool.Exec(t.Context(), `INSERT INTO inbox (seq, principal, subscription_ids, kind, created_at)
		SELECT n, p, '{sub}', 'event', now() FROM generate_series(1, $1::bigint) AS n, (VALUES ('busy'), ('quiet')) AS v(p)
		WHERE p = 'busy' OR n <= 3`, busy); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(t.Context(), `ANALYZE inbox`); err != nil {
		t.Fatal(err)
	}

	spans := []subscriptions.InboxSpan{{Principal: "quiet", After: 0, Through: 3}}
	got, more, err := s.InboxRange(t.Context(), spans, 10)
	if err != nil || more || len(got) != 3 || got[0].Principal != "quiet" || got[2].Seq != 3 {
		t.Fatalf("InboxRange(quiet, 0, 3) = %d entries, more %v, %v; want quiet's 3", len(got), more, err)
	}
	var plan []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		}
	}
	var raw []byte
	if err := s.pool.QueryRow(t.Context(), `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT i.seq`+queries.InboxRange,
		`[{"p":"quiet","a":0,"t":3}]`, 0, 3, 10).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("EXPLAIN: %v %s", err, raw)
	}
	// Three entries and an index descent touch a handful of pages; the
	// busy principal's 20 000 entries fill about a hundred.
	if blocks := plan[0].Plan.Hit + plan[0].Plan.Read; blocks > 20 {
		t.Errorf("reading 3 entries of one principal touched %d pages, as if it scanned the other's %d entries:\n%s", blocks, busy, raw)
	}
}

// TestEnsurePrincipalsDoesNotWait: a publish makes its principals' rows
// before it takes them; for a principal that has one, another transaction
// holding it (a publish to the same principal on another server) must not
// make it wait there as well as where it takes the row.
func TestEnsurePrincipalsDoesNotWait(t *testing.T) {
	s, err := Open(t.Context(), pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.pool.Exec(t.Context(), ensurePrincipals, []string{"alice"}); err != nil {
		t.Fatal(err)
	}
	hold, err := s.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(t.Context())
	if _, err := hold.Exec(t.Context(), `UPDATE principals SET inbox_seq = inbox_seq + 1 WHERE principal = 'alice'`); err != nil {
		t.Fatal(err)
	}
	tx, err := s.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	if _, err := tx.Exec(t.Context(), `SET LOCAL lock_timeout = '2s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), ensurePrincipals, []string{"alice", "bob"}); err != nil {
		t.Fatalf("with alice's row held elsewhere: %v", err)
	}
	var n int
	if err := tx.QueryRow(t.Context(), `SELECT count(*) FROM principals WHERE principal IN ('alice', 'bob')`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("principals alice and bob: %d rows, %v; want 2", n, err)
	}
}

// TestOnePrincipalPlannedOnce: taking one principal's row, as most
// publishes do, and reading the heads of one principal or of none, as a
// follower does with one principal here or none, must reuse a plan rather
// than plan at every call (which cost more than running them: 40 and 65 us
// a call in a burst).
func TestOnePrincipalPlannedOnce(t *testing.T) {
	s, err := open(t.Context(), pgtest.Database(t), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 10 {
		if err := pgx.BeginFunc(t.Context(), s.pool, func(tx pgx.Tx) error {
			return lockPrincipals(t.Context(), tx, []string{"alice"})
		}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Heads(t.Context(), []string{"alice"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Heads(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.pool.Query(t.Context(), `SELECT left(statement, 40), custom_plans, generic_plans FROM pg_prepared_statements
		WHERE statement LIKE 'SELECT principal FROM principals%' OR statement LIKE 'SELECT change_seq, inbox_seq%'`)
	if err != nil {
		t.Fatal(err)
	}
	type plans struct {
		Statement       string
		Custom, Generic int64
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[plans])
	if err != nil || len(got) != 3 {
		t.Fatalf("prepared statements: %+v, %v; want the lock's and Heads' (of one principal and of none)", got, err)
	}
	for _, p := range got {
		if p.Custom > 5 { // PostgreSQL's first five calls are planned as they come
			t.Errorf("%q: planned at each of %d calls, a reused plan for %d", p.Statement, p.Custom, p.Generic)
		}
	}
}
