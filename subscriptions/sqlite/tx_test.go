package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func openTx(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "tx.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.w.Exec(`CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	return s
}

func count(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A panic in a transaction reaches the caller, the transaction is rolled
// back, and the store keeps working.
func TestTxPanicReachesCaller(t *testing.T) {
	s := openTx(t)
	ctx := context.Background()
	got := func() (v any) {
		defer func() { v = recover() }()
		s.tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.Exec(`INSERT INTO t VALUES (1)`); err != nil {
				return err
			}
			panic("boom")
		})
		return nil
	}()
	if got != "boom" {
		t.Fatalf("recovered %v, want boom", got)
	}
	if n := count(t, s); n != 0 {
		t.Fatalf("%d rows after the panicking transaction, want 0", n)
	}
	if err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO t VALUES (2)`)
		return err
	}); err != nil {
		t.Fatalf("tx after the panic: %v", err)
	}
	if n := count(t, s); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}

// An error from f rolls the transaction back and is returned as is.
func TestTxErrorRollsBack(t *testing.T) {
	s := openTx(t)
	want := errors.New("no")
	err := s.tx(context.Background(), func(tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO t VALUES (1)`); err != nil {
			return err
		}
		return want
	})
	if !errors.Is(err, want) {
		t.Fatalf("tx = %v, want %v", err, want)
	}
	if n := count(t, s); n != 0 {
		t.Fatalf("%d rows, want 0", n)
	}
}

// A caller whose context ends while it waits for the writer gives up
// without its transaction ever running.
func TestTxContextEndsWhileWaiting(t *testing.T) {
	s := openTx(t)
	started, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.tx(context.Background(), func(tx *sql.Tx) error {
			close(started)
			<-release
			_, err := tx.Exec(`INSERT INTO t VALUES (1)`)
			return err
		})
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := s.tx(ctx, func(*sql.Tx) error { ran = true; return nil })
	if !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("tx with an ended context = %v (ran %t), want context.Canceled without running", err, ran)
	}
	close(release)
	select {
	case err := <-first:
		if err != nil {
			t.Fatalf("first tx: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("first transaction did not finish")
	}
	if n := count(t, s); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}

// Transactions from many goroutines all commit, one at a time.
func TestTxConcurrent(t *testing.T) {
	s := openTx(t)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- s.tx(context.Background(), func(tx *sql.Tx) error {
				_, err := tx.Exec(`INSERT INTO t VALUES (?)`, i)
				return err
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := count(t, s); got != n {
		t.Fatalf("%d rows, want %d", got, n)
	}
}

// Writes to a closed store fail at once instead of hanging.
func TestTxAfterClose(t *testing.T) {
	for _, path := range []string{"file", Memory} {
		t.Run(path, func(t *testing.T) {
			if path == "file" {
				path = filepath.Join(t.TempDir(), "closed.db")
			}
			s, err := Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- s.tx(context.Background(), func(*sql.Tx) error { return nil }) }()
			select {
			case err := <-done:
				if !errors.Is(err, errClosed) {
					t.Fatalf("tx after Close = %v, want %v", err, errClosed)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("tx after Close on %s hangs", path)
			}
		})
	}
}
