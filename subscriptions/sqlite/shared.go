package sqlite

import (
	"context"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// This file is what processes sharing the database read of each other's
// writes (subscriptions.Shared): the inbox, numbered in commit order across
// processes (SQLite lets one transaction write at a time, and AUTOINCREMENT
// numbers in that order), and subscription_changes, which triggers append to
// with every change that routes events differently.

var (
	_ subscriptions.Shared   = (*Store)(nil)
	_ subscriptions.Notifier = (*Store)(nil)
)

// OwnWritesTold implements subscriptions.Notifier: the log does not say
// who wrote.
func (s *Store) OwnWritesTold() bool { return true }

// Written implements subscriptions.Notifier: on Linux, a write to the
// database's write-ahead log by any process (this one's too) is reported.
// Elsewhere, and for an in-memory database, the channel never receives.
func (s *Store) Written() <-chan struct{} {
	s.writtenOnce.Do(func() {
		s.written = make(chan struct{}, 1)
		if s.path == "" || s.stop == nil {
			return
		}
		watchWrites(s.path, s.written, s.stop) // without it, the follower polls
	})
	return s.written
}

// headsQuery reads the highest inbox number given out and the newest
// subscription change's number (a row of sqlite_sequence, which
// AUTOINCREMENT keeps).
const headsQuery = `SELECT ` + inboxHead + `,
	coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'subscription_changes'), 0)`

// InboxPerPrincipal implements subscriptions.Shared: one writer at a time,
// the store numbers every principal's entries in one sequence.
func (s *Store) InboxPerPrincipal() bool { return false }

// Heads implements subscriptions.Shared.
func (s *Store) Heads(ctx context.Context, _ []string) (map[string]int64, int64, error) {
	var inbox, changes int64
	err := conn{s: s}.one(ctx, headsQuery, nil, &inbox, &changes)
	return map[string]int64{"": inbox}, changes, err
}

// ChangedSubscriptions implements subscriptions.Shared.
func (s *Store) ChangedSubscriptions(ctx context.Context, after, through int64) ([]subscriptions.Change, bool, error) {
	return storecore.ChangedSubscriptions(ctx, s.Core.DB, after, through)
}
