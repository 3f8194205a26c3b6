package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

var _ subscriptions.TypeStore = (*Store)(nil)

// KeepType implements subscriptions.TypeStore, in one statement: its WITH
// sees the table as it was, hence the counts leave out the rows it
// forgets. Two processes adding types at once may pass the limits by one
// each.
func (s *Store) KeepType(ctx context.Context, t string, now time.Time, window time.Duration, limit int) (bool, error) {
	source, _, _ := strings.Cut(t, ".")
	tag, err := s.pool.Exec(ctx, `WITH gone AS (DELETE FROM kept_types WHERE last_seen < $3 AND type <> $1)
		INSERT INTO kept_types (type, source, last_seen) SELECT $1, $4, $2
		  WHERE EXISTS (SELECT 1 FROM kept_types WHERE type = $1 AND last_seen >= $3)
		    OR (SELECT COUNT(*) FROM kept_types WHERE last_seen >= $3) < $5
		   AND (SELECT COUNT(*) FROM kept_types WHERE last_seen >= $3 AND source = $4) < $6
		  ON CONFLICT (type) DO UPDATE SET last_seen = GREATEST(kept_types.last_seen, excluded.last_seen)`,
		t, now, now.Add(-window), source, limit, max(1, limit/4))
	return tag.RowsAffected() > 0, err
}

// KeptTypes implements subscriptions.TypeStore.
func (s *Store) KeptTypes(ctx context.Context, now time.Time, window time.Duration) ([]mcpe.SeenType, error) {
	rows, _ := s.pool.Query(ctx, `SELECT type, last_seen FROM kept_types WHERE last_seen >= $1 ORDER BY last_seen DESC, type`, now.Add(-window))
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (t mcpe.SeenType, err error) {
		err = r.Scan(&t.Type, &t.LastSeenAt)
		t.LastSeenAt = t.LastSeenAt.UTC()
		return t, err
	})
}
