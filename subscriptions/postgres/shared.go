package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// This file is what replicas sharing the database read of each other's
// writes (subscriptions.Shared): the inbox and subscription_changes, both
// numbered in commit order across processes by the counters in the one
// row of changes (migration 0002 tells why a sequence would not do).
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

// Heads implements subscriptions.Shared.
func (s *Store) Heads(ctx context.Context) (inbox, changes int64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT inbox_seq, change_seq FROM changes WHERE id = 1`).Scan(&inbox, &changes)
	if err != nil {
		return 0, 0, fmt.Errorf("read the heads of the inbox and of the subscription changes: %w", err)
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
