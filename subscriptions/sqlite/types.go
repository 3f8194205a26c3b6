package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

var _ subscriptions.TypeStore = (*Store)(nil)

// KeepType implements subscriptions.TypeStore.
func (s *Store) KeepType(ctx context.Context, t string, now time.Time, window time.Duration, limit int) (bool, error) {
	st, err := s.prepared(ctx, `DELETE FROM kept_types WHERE last_seen < ?`,
		`INSERT INTO kept_types (type, source, last_seen) SELECT ?1, ?2, ?3
		  WHERE EXISTS (SELECT 1 FROM kept_types WHERE type = ?1)
		    OR (SELECT COUNT(*) FROM kept_types) < ?4 AND (SELECT COUNT(*) FROM kept_types WHERE source = ?2) < ?5
		  ON CONFLICT (type) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen)`)
	if err != nil {
		return false, err
	}
	source, _, _ := strings.Cut(t, ".")
	var n int64
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.StmtContext(ctx, st[0]).ExecContext(ctx, nanos(now.Add(-window))); err != nil {
			return err
		}
		res, err := tx.StmtContext(ctx, st[1]).ExecContext(ctx, t, source, nanos(now), limit, max(1, limit/4))
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	return n > 0, err
}

// KeptTypes implements subscriptions.TypeStore.
func (s *Store) KeptTypes(ctx context.Context, now time.Time, window time.Duration) ([]mcpe.SeenType, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT type, last_seen FROM kept_types WHERE last_seen >= ? ORDER BY last_seen DESC, type`, nanos(now.Add(-window)))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []mcpe.SeenType
	for rows.Next() {
		var t mcpe.SeenType
		var at int64
		if err := rows.Scan(&t.Type, &at); err != nil {
			return nil, err
		}
		t.LastSeenAt = fromNanos(at)
		out = append(out, t)
	}
	return out, rows.Err()
}
