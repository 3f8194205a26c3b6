package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// MarkRun implements subscriptions.Runs.
func (s *Store) MarkRun(ctx context.Context, run string, t time.Time) (bool, error) {
	if run == "" {
		return false, errors.New("sqlite: empty run")
	}
	var known bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET marked_at = ? WHERE run = ?`, nanos(t), run)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if known = n > 0; known {
			return nil
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO runs (run, marked_at) VALUES (?, ?)`, run, nanos(t))
		return err
	})
	return known, err
}

// LapsedRuns implements subscriptions.Runs.
func (s *Store) LapsedRuns(ctx context.Context, before time.Time, limit int) ([]string, error) {
	st, err := s.rstmts.get(ctx, lapsedRunsQuery)
	if err != nil {
		return nil, err
	}
	return queryStrings(ctx, st, nanos(before), max(limit, 0))
}

const lapsedRunsQuery = `SELECT run FROM runs WHERE marked_at < ? ORDER BY marked_at, run LIMIT ?`

// ReclaimRun implements subscriptions.Runs.
func (s *Store) ReclaimRun(ctx context.Context, run string, before time.Time, prefix string) (bool, int, error) {
	if run == "" || prefix == "" {
		return false, 0, errors.New("sqlite: empty run or principal prefix")
	}
	var reclaimed bool
	var n int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		q, args := `DELETE FROM runs WHERE run = ?`, []any{run}
		if !before.IsZero() {
			q, args = q+` AND marked_at < ?`, append(args, nanos(before))
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		gone, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if gone == 0 && !before.IsZero() {
			// Not there (reclaimed by another) or marked since: nothing
			// of its is ours to delete.
			return nil
		}
		reclaimed = gone > 0
		n, err = deletePrefix(ctx, tx, prefix)
		return err
	})
	return reclaimed, n, err
}
