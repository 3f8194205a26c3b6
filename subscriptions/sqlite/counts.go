package sqlite

import (
	"context"
	"database/sql"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

var _ subscriptions.Counts = (*Store)(nil)

// SubscriptionCounts implements subscriptions.Counts: one scan of the
// subscriptions table.
func (s *Store) SubscriptionCounts(ctx context.Context) ([]subscriptions.SubscriptionCount, error) {
	st, err := s.rstmts.get(ctx, `SELECT COALESCE(timed, 'realtime'), status, COUNT(*) FROM subscriptions GROUP BY 1, 2`)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []subscriptions.SubscriptionCount
	for rows.Next() {
		var c subscriptions.SubscriptionCount
		var mode, status string
		if err := rows.Scan(&mode, &status, &c.N); err != nil {
			return nil, err
		}
		c.Mode, c.Status = mcpe.Channel(mode), mcpe.Status(status)
		out = append(out, c)
	}
	return out, rows.Err()
}

// InboxSizes implements subscriptions.Counts: one pass over the inbox's
// principal index, and one probe of it per principal for the oldest entry
// after its poll cursor.
func (s *Store) InboxSizes(ctx context.Context) ([]subscriptions.InboxSize, error) {
	st, err := s.rstmts.get(ctx, `SELECT i.principal, COUNT(*),
		(SELECT j.created_at FROM inbox j
		  WHERE j.principal = i.principal
		    AND j.seq > COALESCE((SELECT p.poll_cursor FROM principals p WHERE p.principal = i.principal), 0)
		  ORDER BY j.seq LIMIT 1)
		FROM inbox i GROUP BY i.principal`)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []subscriptions.InboxSize
	for rows.Next() {
		var in subscriptions.InboxSize
		var oldest sql.NullInt64
		if err := rows.Scan(&in.Principal, &in.Entries, &oldest); err != nil {
			return nil, err
		}
		if oldest.Valid {
			in.OldestUnpolled = fromNanos(oldest.Int64)
		}
		out = append(out, in)
	}
	return out, rows.Err()
}
