package storecore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// entries reads inbox entries (aliased i), with the body of the event they
// reference, WHERE what follows.
const entries = columns + ` FROM inbox i LEFT JOIN events e ON e.id = i.event_id WHERE `

// columns are what readEntries reads of inbox entries i and events e.
const columns = `SELECT i.seq, i.principal, i.subscription_ids, i.kind, e.body, i.event_ids, i.remaining, i.created_at, i.pending`

// readEntries reads the entries of query, then the bodies of the events of
// the batches among them.
func (c *Core) readEntries(ctx context.Context, query string, args ...any) ([]subscriptions.InboxEntry, error) {
	var out []subscriptions.InboxEntry
	batchIDs := make(map[int][]string)
	bodies := make(map[string]json.RawMessage)
	err := c.DB.Query(ctx, func(r Row) error {
		var e subscriptions.InboxEntry
		var kind string
		var event []byte
		var members []string
		if err := r.Scan(&e.Seq, &e.Principal, &e.SubscriptionIDs, &kind, &event, &members, &e.Remaining, &e.CreatedAt, &e.Pending); err != nil {
			return err
		}
		e.Kind, e.Event = mcpe.InboxKind(kind), event
		if members != nil {
			batchIDs[len(out)] = members
			for _, id := range members {
				bodies[id] = nil
			}
		}
		out = append(out, e)
		return nil
	}, query, args...)
	if err != nil || len(bodies) == 0 {
		return out, err
	}
	if err := ReadBodies(ctx, c.DB, c.Q.Bodies, bodies); err != nil {
		return nil, err
	}
	for i, ids := range batchIDs {
		for _, id := range ids {
			if b := bodies[id]; b != nil {
				out[i].Events = append(out[i].Events, b)
			}
		}
	}
	return out, nil
}

// ReadBodies fills in, through db, the bodies of the event IDs that are the
// keys of bodies, with query (see Queries.Bodies); those retention removed
// stay nil.
func ReadBodies(ctx context.Context, db DB, query string, bodies map[string]json.RawMessage) error {
	ids := make([]string, 0, len(bodies))
	for id := range bodies {
		ids = append(ids, id)
	}
	err := db.Query(ctx, func(r Row) error {
		var id string
		var body []byte
		err := r.Scan(&id, &body)
		bodies[id] = json.RawMessage(body)
		return err
	}, query, ids)
	return wrap("read events", err)
}

// page reads at most limit entries of query, which reads limit+1, and
// says whether there were more.
func (c *Core) page(ctx context.Context, limit int, query string, args ...any) ([]subscriptions.InboxEntry, bool, error) {
	out, err := c.readEntries(ctx, query, args...)
	if err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// ReadInbox implements subscriptions.Store.
func (c *Core) ReadInbox(ctx context.Context, principal string, after int64, limit int) ([]subscriptions.InboxEntry, bool, error) {
	if limit <= 0 {
		return nil, false, c.errLimit("ReadInbox", limit)
	}
	return c.page(ctx, limit, entries+`i.principal = $1 AND i.seq > $2 ORDER BY i.seq LIMIT $3`, principal, after, limit+1)
}

// LatestInbox implements subscriptions.Store.
func (c *Core) LatestInbox(ctx context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error) {
	if limit <= 0 {
		return nil, c.errLimit("LatestInbox", limit)
	}
	return c.readEntries(ctx, `SELECT * FROM (`+entries+`i.principal = $1 ORDER BY i.seq DESC LIMIT $2) AS latest ORDER BY seq`, principal, limit)
}

// InboxEvent implements subscriptions.Store.
func (c *Core) InboxEvent(ctx context.Context, principal, id string) (json.RawMessage, error) {
	var body []byte
	err := one(ctx, c.DB, `SELECT e.body FROM events e WHERE e.id = $2 AND EXISTS (
		SELECT 1 FROM inbox i WHERE i.principal = $1 AND (i.event_id = $2 OR `+c.Q.Holds+`))`, []any{principal, id}, &body)
	return body, wrap("read an event", err)
}

// PendingEntries implements subscriptions.Store.
func (c *Core) PendingEntries(ctx context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error) {
	if limit <= 0 {
		return nil, c.errLimit("PendingEntries", limit)
	}
	return c.readEntries(ctx, `SELECT * FROM (`+entries+`i.principal = $1 AND i.pending = `+c.Q.True+` ORDER BY i.seq DESC LIMIT $2) AS latest ORDER BY seq`, principal, limit)
}

// InboxRange implements subscriptions.Shared.
func (c *Core) InboxRange(ctx context.Context, spans []subscriptions.InboxSpan, limit int) ([]subscriptions.InboxEntry, bool, error) {
	if limit <= 0 {
		return nil, false, c.errLimit("InboxRange", limit)
	}
	type span struct {
		P string `json:"p"`
		A int64  `json:"a"`
		T int64  `json:"t"`
	}
	var list []span
	var lo, hi int64
	for _, s := range spans {
		if s.Through > s.After {
			if len(list) == 0 {
				lo, hi = s.After, s.Through
			}
			list = append(list, span{s.Principal, s.After, s.Through})
			lo, hi = min(lo, s.After), max(hi, s.Through)
		}
	}
	if len(list) == 0 {
		return nil, false, nil
	}
	out, more, err := c.page(ctx, limit, columns+c.Q.InboxRange, MustJSON(list), lo, hi, limit+1)
	return out, more, wrap("read the inbox", err)
}

// ClearPending implements subscriptions.Store.
func (c *Core) ClearPending(ctx context.Context, principal string, seq int64) error {
	_, err := c.DB.Exec(ctx, `UPDATE inbox SET pending = false WHERE principal = $1 AND pending = `+c.Q.True+` AND seq <= $2`, principal, seq)
	return err
}

// PollCursor implements subscriptions.Store.
func (c *Core) PollCursor(ctx context.Context, principal string) (int64, error) {
	return c.principalColumn(ctx, "poll_cursor", principal)
}

// PrunedThrough implements subscriptions.Store.
func (c *Core) PrunedThrough(ctx context.Context, principal string) (int64, error) {
	return c.principalColumn(ctx, "pruned_through", principal)
}

// principalColumn reads a number of principal's, 0 when it has no row.
func (c *Core) principalColumn(ctx context.Context, column, principal string) (int64, error) {
	var n int64
	err := one(ctx, c.DB, `SELECT `+column+` FROM principals WHERE principal = $1`, []any{principal}, &n)
	return n, err
}

// SetPollCursor implements subscriptions.Store.
func (c *Core) SetPollCursor(ctx context.Context, principal string, seq int64) error {
	_, err := c.DB.Exec(ctx, `INSERT INTO principals (principal, poll_cursor) VALUES ($1, $2)
		ON CONFLICT (principal) DO UPDATE SET poll_cursor = excluded.poll_cursor`, principal, seq)
	return err
}

// StoreID implements subscriptions.Shared.
func (c *Core) StoreID(ctx context.Context) (string, error) {
	var id string
	if err := one(ctx, c.DB, `SELECT value FROM meta WHERE key = 'store_id'`, nil, &id); err != nil {
		return "", fmt.Errorf("read the store's ID: %w", err)
	}
	return id, nil
}

// changedQuery reads the subscriptions changed by the changes numbered
// above $1 and at most $2, each once, in the order of its last change, with
// what routing needs of it now (NULLs when it was deleted); see ScanChange.
const changedQuery = `WITH changed AS (
		SELECT subscription_id AS id, max(seq) AS seq FROM subscription_changes
		WHERE seq > $1 AND seq <= $2 GROUP BY subscription_id)
	SELECT c.id, s.principal, s.status, s.filter, s.delivery, s.updated_at
	FROM changed c LEFT JOIN subscriptions s ON s.id = c.id ORDER BY c.seq`

// ChangedSubscriptions reads, through db, the changes after and through
// (see subscriptions.Shared), or reports that retention removed some.
func ChangedSubscriptions(ctx context.Context, db DB, after, through int64) ([]subscriptions.Change, bool, error) {
	if through <= after {
		return nil, true, nil
	}
	var pruned int64
	var out []subscriptions.Change
	err := one(ctx, db, `SELECT changes_pruned_through FROM changes WHERE id = 1`, nil, &pruned)
	if err != nil || pruned > after {
		return nil, false, wrap("read subscription changes", err)
	}
	err = db.Query(ctx, func(r Row) error {
		var (
			c                                   subscriptions.Change
			principal, status, filter, delivery *string
			updated                             *time.Time
		)
		if err := r.Scan(&c.SubscriptionID, &principal, &status, &filter, &delivery, &updated); err != nil {
			return err
		}
		if principal != nil {
			sub := &subscriptions.Subscription{Principal: *principal}
			sub.ID, sub.Status = c.SubscriptionID, mcpe.Status(*status)
			if updated != nil {
				sub.UpdatedAt = *updated
			}
			if err := decodeSettings(sub, *filter, *delivery); err != nil {
				return err
			}
			c.Subscription = sub
		}
		out = append(out, c)
		return nil
	}, changedQuery, after, through)
	return out, err == nil, wrap("read subscription changes", err)
}
