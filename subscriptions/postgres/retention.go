package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// DeletePrincipal implements subscriptions.Store.
func (s *Store) DeletePrincipal(ctx context.Context, principal string) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := lockPrincipals(ctx, tx, []string{principal}); err != nil {
			return err
		}
		for _, q := range []string{
			// The inbox before the subscriptions: deleting a subscription
			// appends a change, which holds the counters' row (that every
			// publish waits for) until the transaction ends.
			`DELETE FROM buffer WHERE subscription_id IN (SELECT id FROM subscriptions WHERE principal = $1)`,
			`DELETE FROM inbox WHERE principal = $1`,
			`DELETE FROM subscriptions WHERE principal = $1`,
			`DELETE FROM principals WHERE principal = $1`,
		} {
			if _, err := tx.Exec(ctx, q, principal); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeletePrincipalsWithPrefix implements subscriptions.Store.
func (s *Store) DeletePrincipalsWithPrefix(ctx context.Context, prefix string) (int, error) {
	if prefix == "" {
		return 0, errors.New("postgres: empty principal prefix")
	}
	var n int
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		n, err = deletePrefix(ctx, tx, prefix)
		return err
	})
	return n, err
}

// deletePrefix deletes, in tx, everything owned by principals whose name
// starts with prefix, and returns how many subscriptions went.
func deletePrefix(ctx context.Context, tx pgx.Tx, prefix string) (int, error) {
	// starts_with instead of LIKE: the prefix may hold % or _.
	const match = ` WHERE starts_with(principal, $1)`
	if _, err := tx.Exec(ctx, `SELECT 1 FROM principals`+match+` ORDER BY principal FOR NO KEY UPDATE`, prefix); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM buffer WHERE subscription_id IN (SELECT id FROM subscriptions`+match+`)`, prefix); err != nil {
		return 0, err
	}
	// The inbox before the subscriptions, as in DeletePrincipal.
	if _, err := tx.Exec(ctx, `DELETE FROM inbox`+match, prefix); err != nil {
		return 0, err
	}
	tag, err := tx.Exec(ctx, `DELETE FROM subscriptions`+match, prefix)
	if err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, `DELETE FROM principals`+match, prefix)
	return int(tag.RowsAffected()), err
}

// Prune implements subscriptions.Store. The inbox entries it deletes are
// first folded into their subscriptions' base counts, so the counts do not
// drop. A zero field of r disables that limit.
func (s *Store) Prune(ctx context.Context, r subscriptions.Retention, now time.Time) (subscriptions.PruneStats, error) {
	var st subscriptions.PruneStats
	err := s.tx(ctx, func(tx pgx.Tx) error {
		st = subscriptions.PruneStats{}
		exec := execer{ctx, tx}
		var err error
		if st.InboxEntries, err = pruneInbox(exec, r, now); err != nil {
			return err
		}
		if r.DedupWindow > 0 {
			// NOT IN over the inbox (its events and its digests' events)
			// and the buffers is computed once (a hashed subplan), not per
			// event.
			if st.Events, err = exec.n(`DELETE FROM events WHERE received_at < $1
				AND id NOT IN (SELECT event_id FROM inbox WHERE event_id IS NOT NULL)
				AND id NOT IN (SELECT unnest(event_ids) FROM inbox WHERE event_ids IS NOT NULL)
				AND id NOT IN (SELECT event_id FROM buffer)`,
				now.Add(-r.DedupWindow)); err != nil {
				return err
			}
		}
		if r.ExpiredMaxAge > 0 {
			// The buffer of a subscription expired by an update goes with it.
			cutoff := now.Add(-r.ExpiredMaxAge)
			if _, err := exec.n(`DELETE FROM buffer WHERE subscription_id IN (
				SELECT id FROM subscriptions WHERE status = 'expired' AND expired_at < $1)`, cutoff); err != nil {
				return err
			}
			if st.Subscriptions, err = exec.n(`DELETE FROM subscriptions WHERE status = 'expired' AND expired_at < $1`,
				cutoff); err != nil {
				return err
			}
		}
		// Last: it takes the counters' row, which every publish waits for.
		return pruneChanges(exec)
	})
	if err != nil {
		return subscriptions.PruneStats{}, err
	}
	return st, nil
}

// ChangesKept is how long a subscription change stays readable by the
// other processes sharing the database (subscriptions.Shared); one that
// has not read it by then reloads every subscription.
const ChangesKept = time.Hour

// pruneChanges drops the subscription changes older than ChangesKept, by
// the database's clock (the triggers that write them date them by it), and
// records the newest one dropped.
func pruneChanges(exec execer) error {
	if _, err := exec.n(`UPDATE changes SET changes_pruned_through = greatest(changes_pruned_through,
			coalesce((SELECT max(seq) FROM subscription_changes WHERE changed_at < now() - $1::bigint * interval '1 millisecond'), 0))
		WHERE id = 1`, ChangesKept.Milliseconds()); err != nil {
		return err
	}
	_, err := exec.n(`DELETE FROM subscription_changes WHERE seq <= (SELECT changes_pruned_through FROM changes WHERE id = 1)`)
	return err
}

// execer runs statements in one transaction.
type execer struct {
	ctx context.Context
	tx  pgx.Tx
}

// n runs q and returns how many rows it changed.
func (e execer) n(q string, args ...any) (int, error) {
	tag, err := e.tx.Exec(e.ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// pruneInbox deletes the inbox entries past r's age and size limits, except
// those a handler run still needs and those r.Keep names, after folding
// their deliveries into their subscriptions' base counts and recording the
// highest of each principal's in pruned_through. It returns how many it
// deleted.
func pruneInbox(exec execer, r subscriptions.Retention, now time.Time) (int, error) {
	if r.InboxMaxAge <= 0 && r.InboxMaxEntries <= 0 {
		return 0, nil
	}
	if _, err := exec.n(`CREATE TEMP TABLE doomed (seq bigint PRIMARY KEY) ON COMMIT DROP`); err != nil {
		return 0, err
	}
	if r.InboxMaxAge > 0 {
		if _, err := exec.n(`INSERT INTO doomed SELECT seq FROM inbox WHERE created_at < $1 ON CONFLICT DO NOTHING`,
			now.Add(-r.InboxMaxAge)); err != nil {
			return 0, err
		}
	}
	if r.InboxMaxEntries > 0 {
		if _, err := exec.n(`INSERT INTO doomed SELECT seq FROM (
			SELECT seq, row_number() OVER (PARTITION BY principal ORDER BY seq DESC) AS n FROM inbox
		) AS ranked WHERE n > $1 ON CONFLICT DO NOTHING`, r.InboxMaxEntries); err != nil {
			return 0, err
		}
	}
	// Handler runs not yet done keep their deliveries, and live sessions
	// what they have not been sent.
	if _, err := exec.n(`DELETE FROM doomed WHERE seq IN (SELECT inbox_seq FROM handler_jobs)`); err != nil {
		return 0, err
	}
	if len(r.Keep) > 0 {
		names := make([]string, 0, len(r.Keep))
		seqs := make([]int64, 0, len(r.Keep))
		for p, seq := range r.Keep {
			names, seqs = append(names, p), append(seqs, seq)
		}
		if _, err := exec.n(`DELETE FROM doomed d USING inbox i, unnest($1::text[], $2::bigint[]) AS k(principal, seq)
			WHERE i.seq = d.seq AND i.principal = k.principal AND i.seq > k.seq`, names, seqs); err != nil {
			return 0, err
		}
	}
	if _, err := exec.n(`INSERT INTO principals (principal, pruned_through)
		SELECT principal, max(seq) FROM inbox WHERE seq IN (SELECT seq FROM doomed) GROUP BY principal ORDER BY principal
		ON CONFLICT (principal) DO UPDATE SET pruned_through = greatest(principals.pruned_through, excluded.pruned_through)`); err != nil {
		return 0, err
	}
	if _, err := exec.n(`UPDATE subscriptions
		SET delivered_base = delivered_base + d.n,
			last_delivered_base = greatest(coalesce(last_delivered_base, d.last), d.last)
		FROM (SELECT j.id AS subscription_id, sum(` + deliveredEvents + `) AS n, max(i.created_at) AS last
			FROM inbox i CROSS JOIN LATERAL unnest(i.subscription_ids) AS j(id)
			WHERE i.seq IN (SELECT seq FROM doomed) AND i.kind IN ('event', 'batch')
			GROUP BY j.id) AS d
		WHERE subscriptions.id = d.subscription_id`); err != nil {
		return 0, err
	}
	return exec.n(`DELETE FROM inbox WHERE seq IN (SELECT seq FROM doomed)`)
}
