package storecore

import (
	"context"
	"fmt"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// DB runs statements on a store's database: its read connections, or one
// transaction. Queries number their arguments $1, $2, ...; times are
// time.Time (*time.Time when NULL may be), lists []string or []int64 and
// maps JSON objects, and the store converts them to and from its columns
// (scanned into *time.Time, **time.Time and *[]string likewise).
type DB interface {
	// Query runs query and calls scan on each row it returns.
	Query(ctx context.Context, scan func(Row) error, query string, args ...any) error
	// Exec runs query and returns how many rows it changed; outside a
	// transaction, as a transaction of its own.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
}

// Row is one row of a Query.
type Row interface{ Scan(dest ...any) error }

// Core is what the stores share, written once over what each supplies: a
// store embeds it, and its methods implement most of subscriptions.Store.
type Core struct {
	// Name begins the errors of the store ("sqlite", "postgres").
	Name string
	// DB reads outside any transaction.
	DB DB
	// Tx runs f in a transaction that writes, which holds the rows of
	// principals (if the store locks rows) before f begins.
	Tx func(ctx context.Context, principals []string, f func(DB) error) error
	Q  Queries
}

// Queries are the statements whose text differs between the stores.
type Queries struct {
	// Greatest is the function that returns the larger of its
	// arguments; Members lists the subscriptions of inbox entry i as
	// j.value; Events counts the events of its event_ids, and Holds is
	// the condition that they include $2.
	Greatest, Members, Events, Holds string
	// Bodies reads (id, body) of the events listed in $1.
	Bodies string
	// InboxRange reads, from FROM on, the inbox entries i (and their
	// events e) of the spans $1 (JSON: [{"p": principal, "a": after, "t":
	// through}]), all above $2 and at most $3, oldest first within a
	// principal, at most $4.
	InboxRange string
	// True is true as the partial indexes on pending name it.
	True string
	// Prefix is the condition that principal begins with $1.
	Prefix string
	// LockPrefix, if set, takes the rows of the principals beginning with $1.
	LockPrefix string
	// Retention's statements (see Prune).
	PruneEvents, PruneChanges, DoomedTable, DoomedKept string
	// The handler runner's statements (see DueJobs): the order of the due
	// jobs, their runs, jobs' claim and release, and the next one due.
	DueTurns, DueJobs, ClaimJobs, ReleaseJobs, NextJob string
	// DueWindows reads the throttle windows ended by $1, at most $2 (see
	// window); DeliverWindow writes and numbers the entry of one.
	DueWindows, DeliverWindow string
}

// one reads the row of query, if there is one, into dest.
func one(ctx context.Context, db DB, query string, args []any, dest ...any) error {
	return db.Query(ctx, func(r Row) error { return r.Scan(dest...) }, query, args...)
}

// scanAll reads the rows of query, each into a T through scan.
func scanAll[T any](ctx context.Context, db DB, scan func(Row, *T) error, query string, args ...any) ([]T, error) {
	var out []T
	err := db.Query(ctx, func(r Row) error {
		var v T
		err := scan(r, &v)
		out = append(out, v)
		return err
	}, query, args...)
	return out, err
}

// Column reads the one column of the rows of query.
func Column[T any](ctx context.Context, db DB, query string, args ...any) ([]T, error) {
	return scanAll(ctx, db, func(r Row, v *T) error { return r.Scan(v) }, query, args...)
}

// errLimit is the error of a read given a limit that is not positive.
func (c *Core) errLimit(method string, limit int) error {
	return fmt.Errorf("%s: %s limit is %d; it must be positive", c.Name, method, limit)
}

// expectRow returns ErrNotFound when a statement changed no row.
func expectRow(n int64, err error) error {
	if err == nil && n == 0 {
		return subscriptions.ErrNotFound
	}
	return err
}

// wrap returns err, if not nil, after what was being done.
func wrap(doing string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", doing, err)
}
