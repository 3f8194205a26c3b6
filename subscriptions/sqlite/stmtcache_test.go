package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// TestStatementCacheDoesNotWaitOnAPrepare checks that a transaction holding
// the only connection gets a statement prepared earlier while another
// caller's first use of a query waits for that connection: the cache's lock
// is not held across the wait, which once stalled every write.
func TestStatementCacheDoesNotWaitOnAPrepare(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	c := &stmtCache{db: db}
	defer c.close()
	if _, err := c.get(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	prepared := make(chan error, 1)
	go func() {
		_, err := c.get(ctx, "SELECT 2") // waits for the connection tx holds
		prepared <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); db.Stats().WaitCount == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the first use of a query never waited for the connection")
		}
		time.Sleep(time.Millisecond)
	}
	got := make(chan error, 1)
	go func() {
		st, err := c.get(ctx, "SELECT 1")
		if err == nil {
			_, err = tx.StmtContext(ctx, st).ExecContext(ctx)
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		tx.Rollback() // lets the waiting prepare go, so the test ends
		t.Fatal("a transaction waited for the statement cache while a prepare waited for its connection")
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-prepared; err != nil {
		t.Fatal(err)
	}
}

// TestCoreStatementsPreparedAfterFirstUse checks that a statement of the
// core's that a transaction ran unprepared (it holds the only write
// connection) is prepared once the transaction ends, so the next one runs
// it prepared, and that the core's $N arguments become SQLite's ?N.
func TestCoreStatementsPreparedAfterFirstUse(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := numbered(`DELETE FROM inbox WHERE principal = $1`)
	if q != `DELETE FROM inbox WHERE principal = ?1` {
		t.Fatalf("numbered = %q", q)
	}
	if got := numbered(`SELECT '$.id', $12`); got != `SELECT '$.id', ?12` {
		t.Fatalf("numbered = %q; want a JSON path kept and $12 as ?12", got)
	}
	if s.wstmts.cached(q) != nil {
		t.Fatal("prepared before its first use")
	}
	for range 2 {
		if err := s.DeletePrincipal(t.Context(), "alice"); err != nil {
			t.Fatal(err)
		}
		if s.wstmts.cached(q) == nil {
			t.Fatal("not prepared after a transaction ran it")
		}
	}
}
