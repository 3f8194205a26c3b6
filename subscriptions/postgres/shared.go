package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// This file is what replicas sharing the database read of each other's
// writes (subscriptions.Shared): each principal's inbox, numbered in commit
// order by the counter on its row of principals (migration 0009), and
// subscription_changes, numbered in commit order across processes by the
// counter in the one row of changes (migration 0002 tells why a sequence
// would not do).
//
// Heads reads those counters as committed. A transaction draws numbers by
// adding to a counter, which locks the row until it commits or rolls back;
// the next transaction to draw waits for that, then adds to the committed
// value. So the committed value n was drawn by a transaction that has
// committed, after every transaction that drew a number below n had
// committed (or rolled back, its numbers then drawn again by a later one),
// and any later draw gets numbers above n: once Heads returned n, nothing
// numbered n or less commits later. A reader never waits: it reads the
// last committed version of the row.

var _ subscriptions.Shared = (*Store)(nil)

// InboxPerPrincipal implements subscriptions.Shared.
func (s *Store) InboxPerPrincipal() bool { return true }

// Heads implements subscriptions.Shared.
func (s *Store) Heads(ctx context.Context, principals []string) (inbox map[string]int64, changes int64, err error) {
	var start int64
	cond, args := principalIn(principals)
	err = s.pool.QueryRow(ctx, `SELECT change_seq, inbox_seq,
		coalesce((SELECT jsonb_object_agg(principal, inbox_seq) FROM principals WHERE `+cond+`), '{}')
		FROM changes WHERE id = 1`, args...).Scan(&changes, &start, &inbox)
	if err != nil {
		return nil, 0, fmt.Errorf("read the heads of the inbox and of the subscription changes: %w", err)
	}
	for _, p := range principals {
		if _, ok := inbox[p]; !ok {
			inbox[p] = start // a principal without a row starts there
		}
	}
	return inbox, changes, nil
}

// ChangedSubscriptions implements subscriptions.Shared. It reads what
// retention removed and the changes in one snapshot, so that a Prune
// committing meanwhile cannot remove changes it then reports complete.
func (s *Store) ChangedSubscriptions(ctx context.Context, after, through int64) (out []subscriptions.Change, complete bool, err error) {
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		out, complete, err = storecore.ChangedSubscriptions(ctx, conn{tx}, after, through)
		return err
	})
	return out, complete, err
}
