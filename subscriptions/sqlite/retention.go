package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// DeletePrincipal implements subscriptions.Store.
func (s *Store) DeletePrincipal(ctx context.Context, principal string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM buffer WHERE subscription_id IN (SELECT id FROM subscriptions WHERE principal = ?)`,
			`DELETE FROM subscriptions WHERE principal = ?`,
			`DELETE FROM inbox WHERE principal = ?`,
			`DELETE FROM principals WHERE principal = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, principal); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeletePrincipalsWithPrefix implements subscriptions.Store.
func (s *Store) DeletePrincipalsWithPrefix(ctx context.Context, prefix string) (int, error) {
	if prefix == "" {
		return 0, errors.New("sqlite: empty principal prefix")
	}
	var n int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = deletePrefix(ctx, tx, prefix)
		return err
	})
	return n, err
}

// deletePrefix deletes, in tx, everything owned by principals whose name
// starts with prefix, and returns how many subscriptions went.
func deletePrefix(ctx context.Context, tx *sql.Tx, prefix string) (int, error) {
	// substr instead of LIKE: the prefix may hold % or _.
	const match = ` WHERE substr(principal, 1, length(?1)) = ?1`
	if _, err := tx.ExecContext(ctx, `DELETE FROM buffer WHERE subscription_id IN (SELECT id FROM subscriptions`+match+`)`, prefix); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM subscriptions`+match, prefix)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM inbox`+match, prefix); err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM principals`+match, prefix)
	return int(n), err
}

// Prune implements subscriptions.Store. The inbox entries it deletes are
// first folded into their subscriptions' base counts, so the counts do not
// drop. A zero field of r disables that limit.
func (s *Store) Prune(ctx context.Context, r subscriptions.Retention, now time.Time) (subscriptions.PruneStats, error) {
	var st subscriptions.PruneStats
	err := s.tx(ctx, func(tx *sql.Tx) error {
		exec := execer{ctx, tx}
		var err error
		if st.InboxEntries, err = pruneInbox(exec, r, now); err != nil {
			return err
		}
		if r.DedupWindow > 0 {
			// NOT IN over the inbox (its events and its digests' events)
			// and the buffers is computed once, not per event.
			if st.Events, err = exec.n(`DELETE FROM events WHERE received_at < ?
				AND id NOT IN (SELECT event_id FROM inbox WHERE event_id IS NOT NULL)
				AND id NOT IN (SELECT j.value FROM inbox, json_each(inbox.event_ids) j WHERE inbox.event_ids IS NOT NULL)
				AND id NOT IN (SELECT event_id FROM buffer)`,
				nanos(now.Add(-r.DedupWindow))); err != nil {
				return err
			}
		}
		if r.ExpiredMaxAge > 0 {
			// The buffer of a subscription expired by an update goes with it.
			cutoff := nanos(now.Add(-r.ExpiredMaxAge))
			if _, err := exec.n(`DELETE FROM buffer WHERE subscription_id IN (
				SELECT id FROM subscriptions WHERE status = 'expired' AND expired_at < ?)`, cutoff); err != nil {
				return err
			}
			if st.Subscriptions, err = exec.n(`DELETE FROM subscriptions WHERE status = 'expired' AND expired_at < ?`,
				cutoff); err != nil {
				return err
			}
		}
		return pruneChanges(exec)
	})
	if err != nil {
		return subscriptions.PruneStats{}, err
	}
	return st, nil
}

// ChangesKept is how long a subscription change stays readable by the
// other processes sharing the store (subscriptions.Shared); one that has
// not read it by then reloads every subscription.
const ChangesKept = time.Hour

// pruneChanges drops the subscription changes older than ChangesKept, by
// SQLite's clock (the triggers that write them date them by it), and
// records the newest one dropped.
func pruneChanges(exec execer) error {
	if _, err := exec.n(`UPDATE changes SET changes_pruned_through = max(changes_pruned_through,
			coalesce((SELECT max(seq) FROM subscription_changes
				WHERE changed_at < CAST(unixepoch('subsec') * 1000 AS INTEGER) - ?), 0))
		WHERE id = 1`, ChangesKept.Milliseconds()); err != nil {
		return err
	}
	_, err := exec.n(`DELETE FROM subscription_changes WHERE seq <= (SELECT changes_pruned_through FROM changes WHERE id = 1)`)
	return err
}

// execer runs statements in one transaction.
type execer struct {
	ctx context.Context
	tx  *sql.Tx
}

// n runs q and returns how many rows it changed.
func (e execer) n(q string, args ...any) (int, error) {
	res, err := e.tx.ExecContext(e.ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// pruneInbox deletes the inbox entries past r's age and size limits, except
// those a handler run still needs, after folding their deliveries into
// their subscriptions' base counts. It returns how many it deleted.
func pruneInbox(exec execer, r subscriptions.Retention, now time.Time) (int, error) {
	if _, err := exec.n(`CREATE TEMP TABLE IF NOT EXISTS doomed (seq INTEGER PRIMARY KEY)`); err != nil {
		return 0, err
	}
	defer exec.n(`DELETE FROM temp.doomed`)
	if r.InboxMaxAge > 0 {
		if _, err := exec.n(`INSERT OR IGNORE INTO temp.doomed SELECT seq FROM inbox WHERE created_at < ?`,
			nanos(now.Add(-r.InboxMaxAge))); err != nil {
			return 0, err
		}
	}
	if r.InboxMaxEntries > 0 {
		if _, err := exec.n(`INSERT OR IGNORE INTO temp.doomed SELECT seq FROM (
			SELECT seq, row_number() OVER (PARTITION BY principal ORDER BY seq DESC) AS n FROM inbox
		) WHERE n > ?`, r.InboxMaxEntries); err != nil {
			return 0, err
		}
	}
	// Handler runs not yet done keep their deliveries, and live sessions
	// what they have not been sent.
	if _, err := exec.n(`DELETE FROM temp.doomed WHERE seq IN (SELECT inbox_seq FROM handler_jobs)`); err != nil {
		return 0, err
	}
	if len(r.Keep) > 0 {
		keep, err := json.Marshal(r.Keep)
		if err != nil {
			return 0, err
		}
		if _, err := exec.n(`DELETE FROM temp.doomed WHERE seq IN (
			SELECT i.seq FROM json_each(?) k JOIN inbox i ON i.principal = k.key AND i.seq > k.value)`, string(keep)); err != nil {
			return 0, err
		}
	}
	if _, err := exec.n(`INSERT INTO principals (principal, pruned_through)
		SELECT principal, max(seq) FROM inbox WHERE seq IN (SELECT seq FROM temp.doomed) GROUP BY principal
		ON CONFLICT (principal) DO UPDATE SET pruned_through = max(pruned_through, excluded.pruned_through)`); err != nil {
		return 0, err
	}
	if _, err := exec.n(`UPDATE subscriptions
		SET delivered_base = delivered_base + d.n,
			last_delivered_base = max(coalesce(last_delivered_base, d.last), d.last)
		FROM (SELECT j.value AS subscription_id, sum(` + deliveredEvents + `) AS n, max(i.created_at) AS last
			FROM inbox i, json_each(i.subscription_ids) j
			WHERE i.seq IN (SELECT seq FROM temp.doomed) AND i.kind IN ('event', 'batch')
			GROUP BY j.value) AS d
		WHERE subscriptions.id = d.subscription_id`); err != nil {
		return 0, err
	}
	return exec.n(`DELETE FROM inbox WHERE seq IN (SELECT seq FROM temp.doomed)`)
}
