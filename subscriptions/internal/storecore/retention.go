package storecore

import (
	"context"
	"errors"
	"time"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// ChangesKept is how long a subscription change stays readable by the
// other processes sharing the store (subscriptions.Shared); one that has
// not read it by then reloads every subscription.
const ChangesKept = time.Hour

// DeletePrincipal implements subscriptions.Store.
func (c *Core) DeletePrincipal(ctx context.Context, principal string) error {
	return c.Tx(ctx, []string{principal}, func(tx DB) error {
		_, err := deleteOwned(ctx, tx, `principal = $1`, principal)
		return err
	})
}

// DeletePrincipalsWithPrefix implements subscriptions.Store.
func (c *Core) DeletePrincipalsWithPrefix(ctx context.Context, prefix string) (n int, err error) {
	if prefix == "" {
		return 0, errors.New(c.Name + ": empty principal prefix")
	}
	err = c.Tx(ctx, nil, func(tx DB) error {
		n, err = c.deletePrefix(ctx, tx, prefix)
		return err
	})
	return n, err
}

// deletePrefix deletes, in tx, everything owned by principals whose name
// starts with prefix, and returns how many subscriptions went.
func (c *Core) deletePrefix(ctx context.Context, tx DB, prefix string) (int, error) {
	if c.Q.LockPrefix != "" {
		if _, err := tx.Exec(ctx, c.Q.LockPrefix, prefix); err != nil {
			return 0, err
		}
	}
	return deleteOwned(ctx, tx, c.Q.Prefix, prefix)
}

// deleteOwned deletes, in tx, everything owned by the principals that
// match (a condition on principal, of $1 = arg), and returns how many
// subscriptions went.
func deleteOwned(ctx context.Context, tx DB, match string, arg any) (int, error) {
	var subs int64
	for i, q := range []string{
		`DELETE FROM buffer WHERE subscription_id IN (SELECT id FROM subscriptions WHERE ` + match + `)`,
		// The inbox before the subscriptions: in PostgreSQL, deleting a
		// subscription appends a change, which holds the change
		// counter's row (that every subscription change waits for)
		// until the transaction ends.
		`DELETE FROM inbox WHERE ` + match,
		`DELETE FROM subscriptions WHERE ` + match,
		`DELETE FROM principals WHERE ` + match,
	} {
		n, err := tx.Exec(ctx, q, arg)
		if err != nil {
			return 0, err
		}
		if i == 2 {
			subs = n
		}
	}
	return int(subs), nil
}

// Prune implements subscriptions.Store. The inbox entries it deletes are
// first folded into their subscriptions' base counts, so the counts do not
// drop. A zero field of r disables that limit.
func (c *Core) Prune(ctx context.Context, r subscriptions.Retention, now time.Time) (subscriptions.PruneStats, error) {
	var st subscriptions.PruneStats
	err := c.Tx(ctx, nil, func(tx DB) error {
		st = subscriptions.PruneStats{}
		n := func(q string, args ...any) (int, error) {
			n, err := tx.Exec(ctx, q, args...)
			return int(n), err
		}
		var err error
		if st.InboxEntries, err = c.pruneInbox(n, r, now); err != nil {
			return err
		}
		if r.DedupWindow > 0 {
			// NOT IN over the inbox (its events and its digests' events)
			// and the buffers is computed once, not per event.
			if st.Events, err = n(c.Q.PruneEvents, now.Add(-r.DedupWindow)); err != nil {
				return err
			}
		}
		if r.ExpiredMaxAge > 0 {
			// The buffer of a subscription expired by an update goes with it.
			cutoff := now.Add(-r.ExpiredMaxAge)
			if _, err := n(`DELETE FROM buffer WHERE subscription_id IN (
				SELECT id FROM subscriptions WHERE status = 'expired' AND expired_at < $1)`, cutoff); err != nil {
				return err
			}
			if st.Subscriptions, err = n(`DELETE FROM subscriptions WHERE status = 'expired' AND expired_at < $1`, cutoff); err != nil {
				return err
			}
		}
		// Last, the changes older than ChangesKept by the database's clock
		// (the triggers that write them date them by it), recording the
		// newest dropped: in PostgreSQL this takes the change counter's
		// row, which every subscription change waits for.
		if _, err := n(c.Q.PruneChanges, ChangesKept.Milliseconds()); err != nil {
			return err
		}
		_, err = n(`DELETE FROM subscription_changes WHERE seq <= (SELECT changes_pruned_through FROM changes WHERE id = 1)`)
		return err
	})
	if err != nil {
		return subscriptions.PruneStats{}, err
	}
	return st, nil
}

// pruneInbox deletes, through n, the inbox entries past r's age and size
// limits, except those a handler run still needs and those r.Keep names,
// after folding their deliveries into their subscriptions' base counts and
// recording the highest of each principal's in pruned_through. It returns
// how many it deleted.
func (c *Core) pruneInbox(n func(string, ...any) (int, error), r subscriptions.Retention, now time.Time) (int, error) {
	if r.InboxMaxAge <= 0 && r.InboxMaxEntries <= 0 {
		return 0, nil
	}
	if _, err := n(c.Q.DoomedTable); err != nil {
		return 0, err
	}
	defer n(`DELETE FROM doomed`)
	if r.InboxMaxAge > 0 {
		if _, err := n(`INSERT INTO doomed SELECT principal, seq FROM inbox WHERE created_at < $1 ON CONFLICT DO NOTHING`,
			now.Add(-r.InboxMaxAge)); err != nil {
			return 0, err
		}
	}
	if r.InboxMaxEntries > 0 {
		if _, err := n(`INSERT INTO doomed SELECT principal, seq FROM (
			SELECT principal, seq, row_number() OVER (PARTITION BY principal ORDER BY seq DESC) AS n FROM inbox
		) AS ranked WHERE n > $1 ON CONFLICT DO NOTHING`, r.InboxMaxEntries); err != nil {
			return 0, err
		}
	}
	// Handler runs not yet done keep their deliveries, and live sessions
	// what they have not been sent.
	if _, err := n(`DELETE FROM doomed WHERE (principal, seq) IN (SELECT principal, inbox_seq FROM handler_jobs)`); err != nil {
		return 0, err
	}
	if len(r.Keep) > 0 {
		if _, err := n(c.Q.DoomedKept, r.Keep); err != nil {
			return 0, err
		}
	}
	for _, q := range []string{`INSERT INTO principals (principal, pruned_through)
		SELECT principal, max(seq) FROM doomed GROUP BY principal ORDER BY principal
		ON CONFLICT (principal) DO UPDATE SET pruned_through = ` + c.Q.Greatest + `(principals.pruned_through, excluded.pruned_through)`,
		`UPDATE subscriptions SET delivered_base = delivered_base + d.n,
			last_delivered_base = ` + c.Q.Greatest + `(coalesce(last_delivered_base, d.last), d.last)
		FROM (` + c.delivered(`(i.principal, i.seq) IN (SELECT principal, seq FROM doomed)`) + `) AS d
		WHERE subscriptions.id = d.subscription_id`,
	} {
		if _, err := n(q); err != nil {
			return 0, err
		}
	}
	return n(`DELETE FROM inbox WHERE (principal, seq) IN (SELECT principal, seq FROM doomed)`)
}

// MarkRun implements subscriptions.Runs.
func (c *Core) MarkRun(ctx context.Context, run string, t time.Time) (known bool, err error) {
	if run == "" {
		return false, errors.New(c.Name + ": empty run")
	}
	err = c.Tx(ctx, nil, func(tx DB) error {
		n, err := tx.Exec(ctx, `UPDATE runs SET marked_at = $2 WHERE run = $1`, run, t)
		if known = n > 0; err != nil || known {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO runs (run, marked_at) VALUES ($1, $2)
			ON CONFLICT (run) DO UPDATE SET marked_at = excluded.marked_at`, run, t)
		return err
	})
	return known, err
}

// LapsedRuns implements subscriptions.Runs.
func (c *Core) LapsedRuns(ctx context.Context, before time.Time, limit int) ([]string, error) {
	return Column[string](ctx, c.DB, `SELECT run FROM runs WHERE marked_at < $1 ORDER BY marked_at, run LIMIT $2`,
		before, max(limit, 0))
}

// ReclaimRun implements subscriptions.Runs.
func (c *Core) ReclaimRun(ctx context.Context, run string, before time.Time, prefix string) (reclaimed bool, n int, err error) {
	if run == "" || prefix == "" {
		return false, 0, errors.New(c.Name + ": empty run or principal prefix")
	}
	err = c.Tx(ctx, nil, func(tx DB) error {
		reclaimed, n = false, 0
		q, args := `DELETE FROM runs WHERE run = $1`, []any{run}
		if !before.IsZero() {
			q, args = q+` AND marked_at < $2`, append(args, before)
		}
		gone, err := tx.Exec(ctx, q, args...)
		if err != nil || (gone == 0 && !before.IsZero()) {
			// Not there (reclaimed by another) or marked since: nothing
			// of its is ours to delete.
			return err
		}
		reclaimed = gone > 0
		n, err = c.deletePrefix(ctx, tx, prefix)
		return err
	})
	return reclaimed, n, err
}
