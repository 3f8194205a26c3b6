package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// Statements of throttle windows (migrations/*_throttle.sql).
const (
	// Opens the window of a group (the new row's folded is 0), or folds the
	// event into the open one; a new group past the bound on open groups
	// (?5) is ?6, the overflow group.
	foldQuery = `INSERT INTO throttle (subscription_id, group_key, event_id, window_end, window_length)
		SELECT ?1, CASE WHEN EXISTS (SELECT 1 FROM throttle WHERE subscription_id = ?1 AND group_key = ?2)
			OR (SELECT count(*) FROM throttle WHERE subscription_id = ?1) < ?5 THEN ?2 ELSE ?6 END, ?3, ?4 + ?7, ?7
		WHERE true
		ON CONFLICT DO UPDATE SET folded = folded + 1, event_id = excluded.event_id
		RETURNING folded`
	dueWindowsQuery = `SELECT t.subscription_id, t.group_key, t.event_id, t.folded, coalesce(s.principal, '')
		FROM throttle t LEFT JOIN subscriptions s ON s.id = t.subscription_id AND s.status = 'active'
		WHERE t.window_end <= ? ORDER BY t.window_end LIMIT ?`
	reopenQuery = `UPDATE throttle SET folded = 0, window_end = ?1 + window_length
		WHERE (subscription_id, group_key) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?2))`
	shutQuery       = `DELETE FROM throttle WHERE (subscription_id, group_key) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))`
	nextWindowQuery = `SELECT min(window_end) FROM throttle`
)

// fold opens or folds into the windows of the new events' throttled
// targets that are active.
func (b *batch) fold() error {
	b.folded = make(map[[2]string]bool)
	for i, p := range b.pubs {
		for _, t := range p.Targets {
			if !b.fresh[i] || t.Window == 0 || !b.isActive[t.SubscriptionID] {
				continue
			}
			var n int
			if err := b.stmt(foldQuery).QueryRowContext(b.ctx, t.SubscriptionID, t.Group, p.Event.ID, nanos(b.now),
				mcpe.MaxThrottleGroups, mcpe.OverflowGroup, int64(t.Window)).Scan(&n); err != nil {
				return err
			}
			b.folded[[2]string{p.Event.ID, t.SubscriptionID}] = n > 0
		}
	}
	return nil
}

// EndWindows implements subscriptions.Store.
func (s *Store) EndWindows(ctx context.Context, now time.Time, limit int) ([]subscriptions.InboxEntry, bool, error) {
	f, err := s.fireStatements(ctx)
	if err != nil {
		return nil, false, err
	}
	st, err := s.prepared(ctx, dueWindowsQuery, reopenQuery, shutQuery)
	if err != nil {
		return nil, false, err
	}
	var out []subscriptions.InboxEntry
	var more bool
	err = s.tx(ctx, func(tx *sql.Tx) error {
		out, more, err = storecore.EndWindows(windowsDriver{fireDriver{f, ctx, tx}, st}, now, limit)
		return err
	})
	return out, more, err
}

// NextWindowEnd implements subscriptions.Store.
func (s *Store) NextWindowEnd(ctx context.Context) (time.Time, bool, error) {
	st, err := s.rstmts.get(ctx, nextWindowQuery)
	if err != nil {
		return time.Time{}, false, err
	}
	var end sql.NullInt64
	err = st.QueryRowContext(ctx).Scan(&end)
	return fromNanos(end.Int64), end.Valid, err
}

// windowsDriver is EndWindows's statements in one transaction.
type windowsDriver struct {
	fireDriver
	st []*sql.Stmt
}

func (d windowsDriver) DueWindows(now time.Time, limit int) ([]storecore.Window, error) {
	var out []storecore.Window
	err := d.each(d.stmt(d.st[0]), []any{nanos(now), limit}, func(rows *sql.Rows) error {
		var w storecore.Window
		err := rows.Scan(&w.SubscriptionID, &w.Group, &w.EventID, &w.Folded, &w.Principal)
		out = append(out, w)
		return err
	})
	return out, err
}

func (d windowsDriver) EndWindows(reopen, shut []storecore.Window, now time.Time) error {
	keys := func(ws []storecore.Window) string {
		out := make([][2]string, len(ws))
		for i, w := range ws {
			out[i] = [2]string{w.SubscriptionID, w.Group}
		}
		return mustJSON(out)
	}
	if _, err := d.stmt(d.st[1]).ExecContext(d.ctx, nanos(now), keys(reopen)); err != nil {
		return err
	}
	_, err := d.stmt(d.st[2]).ExecContext(d.ctx, keys(shut))
	return err
}
