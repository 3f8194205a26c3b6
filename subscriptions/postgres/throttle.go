package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// Statements of throttle windows (migrations/*_throttle.sql), as in the SQLite store.
// A publish folds while it holds its principals' rows; EndWindows takes
// the windows' rows, so that a fold committed meanwhile is seen, and
// another process ending the same windows waits, then finds them not due.
const (
	foldQuery = `INSERT INTO throttle AS t (subscription_id, group_key, event_id, window_end, window_length)
		SELECT $1, CASE WHEN EXISTS (SELECT 1 FROM throttle WHERE subscription_id = $1 AND group_key = $2)
			OR (SELECT count(*) FROM throttle WHERE subscription_id = $1) < $5 THEN $2 ELSE $6 END,
			$3, $4::timestamptz + $7::bigint * interval '1 millisecond', $7::bigint
		ON CONFLICT (subscription_id, group_key) DO UPDATE SET folded = t.folded + 1, event_id = excluded.event_id
		RETURNING folded`
	dueWindowsQuery = `SELECT t.subscription_id, t.group_key, t.event_id, t.folded, coalesce(s.principal, '')
		FROM throttle t LEFT JOIN subscriptions s ON s.id = t.subscription_id AND s.status = 'active'
		WHERE t.window_end <= $1 ORDER BY t.window_end LIMIT $2 FOR UPDATE OF t`
	reopenQuery = `UPDATE throttle t SET folded = 0, window_end = $1::timestamptz + t.window_length * interval '1 millisecond'
		FROM unnest($2::text[], $3::text[]) AS k(sub, grp) WHERE t.subscription_id = k.sub AND t.group_key = k.grp`
	shutQuery = `DELETE FROM throttle t USING unnest($1::text[], $2::text[]) AS k(sub, grp)
		WHERE t.subscription_id = k.sub AND t.group_key = k.grp`
)

// fold opens or folds into the windows of the new events' throttled
// targets that are active, in one round trip.
func (b *batch) fold() error {
	b.folded = make(map[[2]string]bool)
	q := &pgx.Batch{}
	for i, p := range b.pubs {
		for _, t := range p.Targets {
			if !b.fresh[i] || t.Window == 0 || !b.isActive[t.SubscriptionID] {
				continue
			}
			key := [2]string{p.Event.ID, t.SubscriptionID}
			q.Queue(foldQuery, t.SubscriptionID, t.Group, p.Event.ID, b.now, mcpe.MaxThrottleGroups, mcpe.OverflowGroup,
				t.Window.Milliseconds()).QueryRow(func(row pgx.Row) error {
				var n int
				err := row.Scan(&n)
				b.folded[key] = n > 0
				return err
			})
		}
	}
	if q.Len() == 0 {
		return nil
	}
	if err := b.tx.SendBatch(b.ctx, q).Close(); err != nil {
		return fmt.Errorf("throttle: %w", err)
	}
	return nil
}

// EndWindows implements subscriptions.Store.
func (s *Store) EndWindows(ctx context.Context, now time.Time, limit int) ([]subscriptions.InboxEntry, bool, error) {
	var out []subscriptions.InboxEntry
	var more bool
	err := s.tx(ctx, func(tx pgx.Tx) (err error) {
		out, more, err = storecore.EndWindows(windowsDriver{fireDriver{ctx, tx}}, now, limit)
		return err
	})
	return out, more, err
}

// NextWindowEnd implements subscriptions.Store.
func (s *Store) NextWindowEnd(ctx context.Context) (time.Time, bool, error) {
	var end *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT min(window_end) FROM throttle`).Scan(&end); err != nil || end == nil {
		return time.Time{}, false, err
	}
	return end.UTC(), true, nil
}

// windowsDriver is EndWindows's statements in one transaction.
type windowsDriver struct{ fireDriver }

func (d windowsDriver) DueWindows(now time.Time, limit int) ([]storecore.Window, error) {
	rows, _ := d.tx.Query(d.ctx, dueWindowsQuery, now, limit)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (w storecore.Window, err error) {
		err = r.Scan(&w.SubscriptionID, &w.Group, &w.EventID, &w.Folded, &w.Principal)
		return w, err
	})
}

func (d windowsDriver) EndWindows(reopen, shut []storecore.Window, now time.Time) error {
	keys := func(ws []storecore.Window) (subs, groups []string) {
		for _, w := range ws {
			subs, groups = append(subs, w.SubscriptionID), append(groups, w.Group)
		}
		return subs, groups
	}
	q := &pgx.Batch{}
	subs, groups := keys(reopen)
	q.Queue(reopenQuery, now, subs, groups)
	subs, groups = keys(shut)
	q.Queue(shutQuery, subs, groups)
	return d.tx.SendBatch(d.ctx, q).Close()
}
