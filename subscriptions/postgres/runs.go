package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// MarkRun implements subscriptions.Runs.
func (s *Store) MarkRun(ctx context.Context, run string, t time.Time) (bool, error) {
	if run == "" {
		return false, errors.New("postgres: empty run")
	}
	var known bool
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET marked_at = $2 WHERE run = $1`, run, t)
		if err != nil {
			return err
		}
		if known = tag.RowsAffected() > 0; known {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO runs (run, marked_at) VALUES ($1, $2)
			ON CONFLICT (run) DO UPDATE SET marked_at = excluded.marked_at`, run, t)
		return err
	})
	return known, err
}

// LapsedRuns implements subscriptions.Runs.
func (s *Store) LapsedRuns(ctx context.Context, before time.Time, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT run FROM runs WHERE marked_at < $1 ORDER BY marked_at, run LIMIT $2`,
		before, max(limit, 0))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ReclaimRun implements subscriptions.Runs.
func (s *Store) ReclaimRun(ctx context.Context, run string, before time.Time, prefix string) (bool, int, error) {
	if run == "" || prefix == "" {
		return false, 0, errors.New("postgres: empty run or principal prefix")
	}
	var reclaimed bool
	var n int
	err := s.tx(ctx, func(tx pgx.Tx) error {
		reclaimed, n = false, 0
		q, args := `DELETE FROM runs WHERE run = $1`, []any{run}
		if !before.IsZero() {
			q, args = q+` AND marked_at < $2`, append(args, before)
		}
		tag, err := tx.Exec(ctx, q, args...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 && !before.IsZero() {
			// Not there (reclaimed by another) or marked since: nothing
			// of its is ours to delete.
			return nil
		}
		reclaimed = tag.RowsAffected() > 0
		n, err = deletePrefix(ctx, tx, prefix)
		return err
	})
	return reclaimed, n, err
}
