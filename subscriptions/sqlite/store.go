// Package sqlite is the subscriptions.Store on SQLite, through the pure-Go
// modernc.org/sqlite driver: one file (or :memory:), WAL journal, busy
// timeout, and migrations embedded in the binary.
package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Memory is the path that opens a private in-memory database.
const Memory = ":memory:"

// Store is a subscriptions.Store backed by SQLite.
type Store struct {
	// w is the only connection that writes, so writers queue in Go instead
	// of spinning on SQLITE_BUSY; r serves reads concurrently (WAL).
	w, r *sql.DB
	// Prepared statements by query text, for each pool. A write statement
	// must be fetched before its transaction begins: the transaction holds
	// the only write connection, and preparing needs one.
	wstmts, rstmts stmtCache

	// bufferSeq numbers the events added to buffers.
	bufferSeq atomic.Int64

	// commits counts write transactions, so the checkpointer knows when
	// there is something to do; stop and done end it.
	commits    atomic.Int64
	stop, done chan struct{}
	closeOnce  sync.Once
	closeErr   error
}

// checkpointEvery is how often the WAL is copied back into the database
// when there were commits.
const checkpointEvery = time.Second

// maxInboxRows is the most inbox rows one prepared INSERT writes; a publish
// reaching more principals uses several.
const maxInboxRows = 16

var _ subscriptions.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path and applies the
// migrations. Path may be Memory.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	params := url.Values{}
	params.Add("_pragma", "busy_timeout(10000)")
	params.Add("_pragma", "foreign_keys(ON)")
	params.Add("_txlock", "immediate")
	if path == Memory {
		db, err := sql.Open("sqlite", "file::memory:?"+params.Encode())
		if err != nil {
			return nil, fmt.Errorf("open in-memory database: %w", err)
		}
		// Each connection to :memory: is its own database: keep one.
		db.SetMaxOpenConns(1)
		s := &Store{w: db, r: db}
		if err := s.init(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("in-memory database: %w", err)
		}
		return s, nil
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create database directory %q: %w", dir, err)
		}
	}
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "synchronous(NORMAL)")
	// Commits do not checkpoint (that would stall a publish for the time of
	// a checkpoint and its fsync); checkpoint runs beside them instead.
	params.Add("_pragma", "wal_autocheckpoint(0)")
	params.Add("_pragma", "journal_size_limit(67108864)")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + params.Encode()
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database %q: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open("sqlite", dsn)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open database %q: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	s := &Store{w: w, r: r}
	if err := s.init(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("database %q: %w", path, err)
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.checkpoint()
	return s, nil
}

// checkpoint copies the WAL back into the database once a second when
// there were commits, without blocking writers (PASSIVE), until Close.
func (s *Store) checkpoint() {
	defer close(s.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	var seen int64
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if n := s.commits.Load(); n != seen {
			seen = n
			// A failed checkpoint is retried at the next tick; the WAL only
			// grows meanwhile.
			s.r.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
		}
	}
}

// init migrates the schema and sets up the statement caches.
func (s *Store) init(ctx context.Context) error {
	s.wstmts.db, s.rstmts.db = s.w, s.r
	if err := s.migrate(ctx); err != nil {
		return err
	}
	var seq int64
	if err := s.w.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM buffer`).Scan(&seq); err != nil {
		return fmt.Errorf("read buffer sequence: %w", err)
	}
	s.bufferSeq.Store(seq)
	return nil
}

// stmtCache prepares each query once per pool.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.m[query]; st != nil {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare statement: %w", err)
	}
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	c.m[query] = st
	return st, nil
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	for _, st := range c.m {
		err = errors.Join(err, st.Close())
	}
	c.m = nil
	return err
}

// prepared returns the write statements of queries, in order, for use in a
// transaction that has not begun yet.
func (s *Store) prepared(ctx context.Context, queries ...string) ([]*sql.Stmt, error) {
	out := make([]*sql.Stmt, len(queries))
	for i, q := range queries {
		var err error
		if out[i], err = s.wstmts.get(ctx, q); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Close closes the database. Calling it again returns the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Store) close() error {
	if s.stop != nil {
		close(s.stop)
		<-s.done
	}
	err := errors.Join(s.wstmts.close(), s.rstmts.close(), s.w.Close())
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// migrate applies the embedded migrations that the database has not seen,
// tracking progress in PRAGMA user_version.
func (s *Store) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	var version int
	if err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if version > len(names) {
		return fmt.Errorf("schema version %d is newer than this binary knows (%d); use a newer mcpe-server", version, len(names))
	}
	for i := version; i < len(names); i++ {
		body, err := migrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		err = s.tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", i+1))
			return err
		})
		if err != nil {
			return fmt.Errorf("apply migration %s: %w", names[i], err)
		}
	}
	return nil
}

func (s *Store) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	s.commits.Add(1)
	return tx.Commit()
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func nullNanos(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

func timePtr(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNanos(n.Int64)
	return &t
}

// CreateSubscription implements subscriptions.Store.
func (s *Store) CreateSubscription(ctx context.Context, sub *subscriptions.Subscription, max int) error {
	filter, delivery, err := encodeSettings(sub)
	if err != nil {
		return err
	}
	handler, secrets, err := encodeHandler(sub.Handler, sub.Secrets)
	if err != nil {
		return err
	}
	// Prune dates expired subscriptions by expired_at.
	var expiredAt sql.NullInt64
	if sub.Status == mcpe.StatusExpired {
		expiredAt = nullNanos(&sub.UpdatedAt)
	}
	st, err := s.prepared(ctx,
		`SELECT coalesce((SELECT live_subscriptions FROM principals WHERE principal = ?), 0)`,
		`INSERT INTO subscriptions
			(id, principal, status, filter, delivery, created_at, updated_at, expires_at, expired_at,
			 delivered_base, last_delivered_base, next_fire_at, last_fire_at, handler, handler_secrets, timed)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.StmtContext(ctx, st[0]).QueryRowContext(ctx, sub.Principal).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return &subscriptions.LimitError{Max: max}
		}
		_, err := tx.StmtContext(ctx, st[1]).ExecContext(ctx,
			sub.ID, sub.Principal, string(sub.Status), filter, delivery,
			nanos(sub.CreatedAt), nanos(sub.UpdatedAt), nullNanos(sub.ExpiresAt), expiredAt,
			sub.DeliveredCount, nullNanos(sub.LastDeliveredAt), nullNanos(sub.NextFireAt), nullNanos(sub.LastFireAt),
			handler, secrets, timed(sub.Delivery))
		return err
	})
}

func encodeSettings(sub *subscriptions.Subscription) (filter, delivery string, err error) {
	f, err := json.Marshal(sub.Filter)
	if err != nil {
		return "", "", err
	}
	d, err := json.Marshal(sub.Delivery)
	if err != nil {
		return "", "", err
	}
	return string(f), string(d), nil
}

// selectSubscriptions reads subscriptions with their delivery counts: the
// base columns plus the 'event' and 'batch' entries still in the inbox that
// list them (a batch counts its events), and how many events wait in their
// buffers. The counts are grouped over the inbox entries of the same
// principals, through the inbox's principal index. where filters s.
func selectSubscriptions(where string) string {
	return `SELECT s.id, s.principal, s.status, s.filter, s.delivery, s.created_at, s.updated_at, s.expires_at,
		s.delivered_base + coalesce(c.n, 0),
		CASE WHEN c.last IS NULL THEN s.last_delivered_base
			WHEN s.last_delivered_base IS NULL THEN c.last
			ELSE max(c.last, s.last_delivered_base) END,
		s.next_fire_at, s.last_fire_at,
		(SELECT count(*) FROM buffer b WHERE b.subscription_id = s.id),
		s.handler, s.handler_secrets, s.handler_disabled, s.handler_succeeded, s.handler_failed,
		s.handler_last_run_at, s.handler_last_error, s.handler_last_output, s.handler_last_tools,
		CASE WHEN s.handler IS NULL THEN 0 ELSE (SELECT count(*) FROM handler_jobs h WHERE h.subscription_id = s.id) END
	FROM subscriptions s
	LEFT JOIN (
		SELECT j.value AS subscription_id, sum(` + deliveredEvents + `) AS n, max(i.created_at) AS last
		FROM inbox i, json_each(i.subscription_ids) j
		WHERE i.kind IN ('event', 'batch') AND i.principal IN (SELECT principal FROM subscriptions s WHERE ` + where + `)
		GROUP BY j.value
	) c ON c.subscription_id = s.id
	WHERE ` + where
}

// deliveredEvents is how many events the inbox entry i delivered.
const deliveredEvents = `CASE i.kind WHEN 'batch' THEN json_array_length(i.event_ids) ELSE 1 END`

type scanner interface{ Scan(...any) error }

func scanSubscription(row scanner) (*subscriptions.Subscription, error) {
	var (
		sub                subscriptions.Subscription
		status             string
		filter, delivery   string
		created, updated   int64
		expires, lastDeliv sql.NullInt64
	)
	var nextFire, lastFire sql.NullInt64
	var h storedHandler
	err := row.Scan(&sub.ID, &sub.Principal, &status, &filter, &delivery, &created, &updated,
		&expires, &sub.DeliveredCount, &lastDeliv, &nextFire, &lastFire, &sub.BufferedEvents,
		&h.spec, &h.secrets, &h.disabled, &h.status.Succeeded, &h.status.Failed,
		&h.lastRun, &h.lastError, &h.lastOutput, &h.lastTools, &h.status.Pending)
	if err != nil {
		return nil, err
	}
	if err := h.decode(&sub); err != nil {
		return nil, err
	}
	sub.NextFireAt, sub.LastFireAt = timePtr(nextFire), timePtr(lastFire)
	sub.Status = mcpe.Status(status)
	if err := json.Unmarshal([]byte(filter), &sub.Filter); err != nil {
		return nil, fmt.Errorf("subscription %s: decode filter: %w", sub.ID, err)
	}
	if err := json.Unmarshal([]byte(delivery), &sub.Delivery); err != nil {
		return nil, fmt.Errorf("subscription %s: decode delivery: %w", sub.ID, err)
	}
	sub.CreatedAt = fromNanos(created)
	sub.UpdatedAt = fromNanos(updated)
	sub.ExpiresAt = timePtr(expires)
	sub.LastDeliveredAt = timePtr(lastDeliv)
	return &sub, nil
}

// GetSubscription implements subscriptions.Store.
func (s *Store) GetSubscription(ctx context.Context, principal, id string) (*subscriptions.Subscription, error) {
	st, err := s.rstmts.get(ctx, selectSubscriptions(`s.id = ?1 AND s.principal = ?2`))
	if err != nil {
		return nil, err
	}
	sub, err := scanSubscription(st.QueryRowContext(ctx, id, principal))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, subscriptions.ErrNotFound
	}
	return sub, err
}

// UpdateSubscription implements subscriptions.Store.
func (s *Store) UpdateSubscription(ctx context.Context, sub *subscriptions.Subscription) error {
	filter, delivery, err := encodeSettings(sub)
	if err != nil {
		return err
	}
	// expired_at, which Prune dates expired subscriptions by, is set when
	// the status becomes expired and cleared when it stops being.
	st, err := s.prepared(ctx, `UPDATE subscriptions
		SET status = ?1, filter = ?2, delivery = ?3, updated_at = ?4, expires_at = ?5,
			expired_at = CASE WHEN ?1 <> 'expired' THEN NULL
				WHEN status = 'expired' THEN coalesce(expired_at, ?4) ELSE ?4 END,
			next_fire_at = ?8, timed = ?9
		WHERE id = ?6 AND principal = ?7`)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, st[0]).ExecContext(ctx,
			string(sub.Status), filter, delivery, nanos(sub.UpdatedAt), nullNanos(sub.ExpiresAt),
			sub.ID, sub.Principal, nullNanos(sub.NextFireAt), timed(sub.Delivery))
		return expectRow(res, err)
	})
}

func expectRow(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return subscriptions.ErrNotFound
	}
	return nil
}

// DeleteSubscription implements subscriptions.Store.
func (s *Store) DeleteSubscription(ctx context.Context, principal, id string) error {
	st, err := s.prepared(ctx,
		`DELETE FROM subscriptions WHERE id = ? AND principal = ?`,
		`DELETE FROM buffer WHERE subscription_id = ?`)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := expectRow(tx.StmtContext(ctx, st[0]).ExecContext(ctx, id, principal)); err != nil {
			return err
		}
		_, err := tx.StmtContext(ctx, st[1]).ExecContext(ctx, id)
		return err
	})
}

// ListSubscriptions implements subscriptions.Store.
func (s *Store) ListSubscriptions(ctx context.Context, q subscriptions.ListQuery) ([]*subscriptions.Subscription, error) {
	var where []string
	var args []any
	if q.Principal != "" {
		args = append(args, q.Principal)
		where = append(where, fmt.Sprintf("s.principal = ?%d", len(args)))
	}
	if q.Status != "" {
		args = append(args, string(q.Status))
		where = append(where, fmt.Sprintf("s.status = ?%d", len(args)))
	}
	cond := "true"
	if len(where) > 0 {
		cond = strings.Join(where, " AND ")
	}
	query := selectSubscriptions(cond) + " ORDER BY s.created_at, s.id"
	st, err := s.rstmts.get(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*subscriptions.Subscription
	for rows.Next() {
		sub, err := scanSubscription(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sub)
	}
	return out, rows.Err()
}

// expireFlush is the size of the batches in which an expiring subscription's
// buffer is delivered.
const expireFlush = 1000

// ExpireSubscriptions implements subscriptions.Store.
func (s *Store) ExpireSubscriptions(ctx context.Context, now time.Time) ([]subscriptions.InboxEntry, error) {
	f, err := s.fireStatements(ctx)
	if err != nil {
		return nil, err
	}
	var out []subscriptions.InboxEntry
	err = s.tx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, `UPDATE subscriptions
			SET status = 'expired', expired_at = ?1, updated_at = ?1, next_fire_at = NULL
			WHERE status IN ('active', 'paused') AND expires_at IS NOT NULL AND expires_at <= ?1
			RETURNING id, principal`, nanos(now))
		if err != nil {
			return err
		}
		var reqs []subscriptions.FireRequest
		for rows.Next() {
			// What still waits for a digest goes out with the expiry.
			r := subscriptions.FireRequest{Max: expireFlush, Aggregate: true, Drain: true, Expire: true}
			if err := rows.Scan(&r.SubscriptionID, &r.Principal); err != nil {
				rows.Close()
				return err
			}
			reqs = append(reqs, r)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		slices.SortFunc(reqs, func(a, b subscriptions.FireRequest) int { return cmp.Compare(a.SubscriptionID, b.SubscriptionID) })
		results, err := f.fire(ctx, tx, reqs, now, false)
		for _, r := range results {
			out = append(out, r.Entries...)
		}
		return err
	})
	return out, err
}

// NextExpiry implements subscriptions.Store.
func (s *Store) NextExpiry(ctx context.Context) (time.Time, bool, error) {
	var n sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT min(expires_at) FROM subscriptions
		WHERE status IN ('active', 'paused') AND expires_at IS NOT NULL`).Scan(&n)
	if err != nil || !n.Valid {
		return time.Time{}, false, err
	}
	return fromNanos(n.Int64), true, nil
}

// Publish implements subscriptions.Store. It writes the event, one inbox row
// per principal and one buffer row per cron or scheduled target with plain
// INSERTs through prepared statements; nothing else is written per delivery,
// because the counts are derived from the inbox. Targets are taken as given: the index matched only
// active subscriptions, and a subscription paused a moment after the match
// is treated as paused a moment after the event.
func (s *Store) Publish(ctx context.Context, ev *mcpe.Event, raw json.RawMessage, targets []subscriptions.Target, now time.Time) (subscriptions.PublishResult, error) {
	res := subscriptions.PublishResult{EventID: ev.ID}
	now = now.UTC()
	entries := groupByPrincipal(targets)
	ids := make([]string, len(entries))
	for i, e := range entries {
		b, err := json.Marshal(e.SubscriptionIDs)
		if err != nil {
			return res, err
		}
		ids[i] = string(b)
	}
	var buffered []string
	seen := make(map[string]bool)
	for _, t := range targets {
		if (t.Channel == mcpe.ChannelCron || t.Channel == mcpe.ChannelScheduled) && !seen[t.SubscriptionID] {
			seen[t.SubscriptionID] = true
			buffered = append(buffered, t.SubscriptionID)
		}
	}
	bufferList, err := json.Marshal(buffered)
	if err != nil {
		return res, err
	}
	var source sql.NullString
	if ev.Metadata.SourceEventID != "" {
		source = sql.NullString{String: ev.Metadata.SourceEventID, Valid: true}
	}
	queries := []string{
		`INSERT INTO events (id, type, source_event_id, body, received_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		`SELECT id FROM events WHERE id = ? OR (type = ? AND source_event_id = ?) LIMIT 1`,
		`INSERT INTO buffer (subscription_id, seq, event_id, created_at) SELECT value, ?4, ?2, ?3 FROM json_each(?1)`,
	}
	for start := 0; start < len(entries); start += maxInboxRows {
		queries = append(queries, insertInbox(min(maxInboxRows, len(entries)-start)))
	}
	stmts, err := s.prepared(ctx, queries...)
	if err != nil {
		return res, err
	}
	insertEvent, findDuplicate, insertBuffer, inboxStmts := stmts[0], stmts[1], stmts[2], stmts[3:]
	err = s.tx(ctx, func(tx *sql.Tx) error {
		r, err := tx.StmtContext(ctx, insertEvent).ExecContext(ctx, ev.ID, ev.Type, source, string(raw), nanos(now))
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			res.Duplicate = true
			return tx.StmtContext(ctx, findDuplicate).QueryRowContext(ctx, ev.ID, ev.Type, source).Scan(&res.EventID)
		}
		for i, st := range inboxStmts {
			start := i * maxInboxRows
			end := min(start+maxInboxRows, len(entries))
			if err := writeInbox(ctx, tx, st, ev.ID, now, entries[start:end], ids[start:end]); err != nil {
				return err
			}
		}
		if len(buffered) > 0 {
			// Numbered here, while the transaction holds the only write
			// connection, so that buffer order is commit order.
			seq := s.bufferSeq.Add(1)
			if _, err := tx.StmtContext(ctx, insertBuffer).ExecContext(ctx, string(bufferList), ev.ID, nanos(now), seq); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || res.Duplicate {
		return res, err
	}
	for i := range entries {
		entries[i].Kind, entries[i].Event, entries[i].CreatedAt = mcpe.InboxEvent, raw, now
	}
	slices.SortFunc(entries, func(a, b subscriptions.InboxEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	res.Delivered = entries
	return res, nil
}

// groupByPrincipal turns realtime targets into one inbox entry per principal,
// in the order the principals first appear, each subscription listed once.
func groupByPrincipal(targets []subscriptions.Target) []subscriptions.InboxEntry {
	var out []subscriptions.InboxEntry
	byPrincipal := make(map[string]int)
	listed := make(map[string]bool)
	for _, t := range targets {
		if t.Channel != mcpe.ChannelRealtime || listed[t.SubscriptionID] {
			continue
		}
		listed[t.SubscriptionID] = true
		i, ok := byPrincipal[t.Principal]
		if !ok {
			i = len(out)
			byPrincipal[t.Principal] = i
			out = append(out, subscriptions.InboxEntry{Principal: t.Principal})
		}
		out[i].SubscriptionIDs = append(out[i].SubscriptionIDs, t.SubscriptionID)
	}
	return out
}

// writeInbox inserts entries with stmt, the INSERT of that many rows, and
// sets their Seq.
func writeInbox(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, eventID string, now time.Time, entries []subscriptions.InboxEntry, ids []string) error {
	args := make([]any, 0, 4*len(entries))
	for i, e := range entries {
		args = append(args, e.Principal, ids[i], eventID, nanos(now))
	}
	rows, err := tx.StmtContext(ctx, stmt).QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	// RETURNING promises no order; match rows by principal.
	for rows.Next() {
		var seq int64
		var principal string
		if err := rows.Scan(&seq, &principal); err != nil {
			rows.Close()
			return err
		}
		if i := slices.IndexFunc(entries, func(e subscriptions.InboxEntry) bool { return e.Principal == principal }); i >= 0 {
			entries[i].Seq = seq
		}
	}
	return errors.Join(rows.Err(), rows.Close())
}

// insertInbox is the INSERT of n inbox rows.
func insertInbox(n int) string {
	values := strings.TrimSuffix(strings.Repeat(`(?, ?, 'event', ?, ?), `, n), ", ")
	return `INSERT INTO inbox (principal, subscription_ids, kind, event_id, created_at)
		VALUES ` + values + ` RETURNING seq, principal`
}

// entryColumns and entryFrom read inbox entries (aliased i) with the body
// of the event they reference.
const (
	entryColumns = `i.seq, i.principal, i.subscription_ids, i.kind, e.body, i.event_ids, i.remaining, i.created_at`
	entryFrom    = ` FROM inbox i LEFT JOIN events e ON e.id = i.event_id `
)

// readEntries reads rows of entryColumns, then the bodies of the events of
// the batches among them.
func (s *Store) readEntries(ctx context.Context, rows *sql.Rows, capacity int) ([]subscriptions.InboxEntry, error) {
	out := make([]subscriptions.InboxEntry, 0, capacity)
	batchIDs := make(map[int][]string)
	bodies := make(map[string]json.RawMessage)
	err := func() error {
		defer rows.Close()
		for rows.Next() {
			var (
				e              subscriptions.InboxEntry
				ids, kind      string
				event, members sql.NullString
				created        int64
			)
			if err := rows.Scan(&e.Seq, &e.Principal, &ids, &kind, &event, &members, &e.Remaining, &created); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(ids), &e.SubscriptionIDs); err != nil {
				return fmt.Errorf("inbox entry %d: decode subscription IDs: %w", e.Seq, err)
			}
			e.Kind = mcpe.InboxKind(kind)
			if event.Valid {
				e.Event = json.RawMessage(event.String)
			}
			if members.Valid {
				var list []string
				if err := json.Unmarshal([]byte(members.String), &list); err != nil {
					return fmt.Errorf("inbox entry %d: decode batch: %w", e.Seq, err)
				}
				batchIDs[len(out)] = list
				for _, id := range list {
					bodies[id] = nil
				}
			}
			e.CreatedAt = fromNanos(created)
			out = append(out, e)
		}
		return rows.Err()
	}()
	if err != nil || len(bodies) == 0 {
		return out, err
	}
	if err := s.eventBodies(ctx, &s.rstmts, nil, bodies); err != nil {
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

// bodiesQuery reads the bodies of a JSON array of event IDs.
const bodiesQuery = `SELECT id, body FROM events WHERE id IN (SELECT value FROM json_each(?))`

// eventBodies fills in the bodies of the event IDs that are the keys of
// bodies, through the statement cache c (in tx when not nil; the statement
// must then be prepared already).
func (s *Store) eventBodies(ctx context.Context, c *stmtCache, tx *sql.Tx, bodies map[string]json.RawMessage) error {
	st, err := c.get(ctx, bodiesQuery)
	if err != nil {
		return err
	}
	if tx != nil {
		st = tx.StmtContext(ctx, st)
	}
	ids := make([]string, 0, len(bodies))
	for id := range bodies {
		ids = append(ids, id)
	}
	rows, err := st.QueryContext(ctx, mustJSON(ids))
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, body string
		if err := rows.Scan(&id, &body); err != nil {
			return err
		}
		bodies[id] = json.RawMessage(body)
	}
	return rows.Err()
}

// ReadInbox implements subscriptions.Store.
func (s *Store) ReadInbox(ctx context.Context, principal string, after int64, limit int) ([]subscriptions.InboxEntry, bool, error) {
	if limit <= 0 {
		return nil, false, fmt.Errorf("sqlite: ReadInbox limit is %d; it must be positive", limit)
	}
	st, err := s.rstmts.get(ctx, `SELECT `+entryColumns+entryFrom+`
		WHERE i.principal = ? AND i.seq > ? ORDER BY i.seq LIMIT ?`)
	if err != nil {
		return nil, false, err
	}
	rows, err := st.QueryContext(ctx, principal, after, limit+1)
	if err != nil {
		return nil, false, err
	}
	out, err := s.readEntries(ctx, rows, limit+1)
	if err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// PendingEntries implements subscriptions.Store.
func (s *Store) PendingEntries(ctx context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("sqlite: PendingEntries limit is %d; it must be positive", limit)
	}
	st, err := s.rstmts.get(ctx, `SELECT * FROM (SELECT `+entryColumns+entryFrom+`
		WHERE i.principal = ? AND i.pending = 1 ORDER BY i.seq DESC LIMIT ?) ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, principal, limit)
	if err != nil {
		return nil, err
	}
	return s.readEntries(ctx, rows, limit)
}

// ClearPending implements subscriptions.Store.
func (s *Store) ClearPending(ctx context.Context, principal string, seq int64) error {
	st, err := s.prepared(ctx, `UPDATE inbox SET pending = 0 WHERE principal = ? AND pending = 1 AND seq <= ?`)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, st[0]).ExecContext(ctx, principal, seq)
		return err
	})
}

// PollCursor implements subscriptions.Store.
func (s *Store) PollCursor(ctx context.Context, principal string) (int64, error) {
	var seq int64
	st, err := s.rstmts.get(ctx, `SELECT poll_cursor FROM principals WHERE principal = ?`)
	if err != nil {
		return 0, err
	}
	err = st.QueryRowContext(ctx, principal).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// SetPollCursor implements subscriptions.Store.
func (s *Store) SetPollCursor(ctx context.Context, principal string, seq int64) error {
	st, err := s.prepared(ctx, `INSERT INTO principals (principal, poll_cursor) VALUES (?1, ?2)
		ON CONFLICT (principal) DO UPDATE SET poll_cursor = ?2`)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, st[0]).ExecContext(ctx, principal, seq)
		return err
	})
}

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
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// substr instead of LIKE: the prefix may hold % or _.
		const match = ` WHERE substr(principal, 1, length(?1)) = ?1`
		if _, err := tx.ExecContext(ctx, `DELETE FROM buffer WHERE subscription_id IN (SELECT id FROM subscriptions`+match+`)`, prefix); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM subscriptions`+match, prefix)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM inbox`+match, prefix); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM principals`+match, prefix)
		return err
	})
	return int(n), err
}

// Prune implements subscriptions.Store. The inbox entries it deletes are
// first folded into their subscriptions' base counts, so the counts do not
// drop. A zero field of r disables that limit.
func (s *Store) Prune(ctx context.Context, r subscriptions.Retention, now time.Time) (subscriptions.PruneStats, error) {
	var st subscriptions.PruneStats
	err := s.tx(ctx, func(tx *sql.Tx) error {
		st = subscriptions.PruneStats{}
		exec := func(q string, args ...any) (int, error) {
			res, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return 0, err
			}
			n, err := res.RowsAffected()
			return int(n), err
		}
		if _, err := exec(`CREATE TEMP TABLE IF NOT EXISTS doomed (seq INTEGER PRIMARY KEY)`); err != nil {
			return err
		}
		defer tx.ExecContext(ctx, `DELETE FROM temp.doomed`)
		if r.InboxMaxAge > 0 {
			if _, err := exec(`INSERT OR IGNORE INTO temp.doomed SELECT seq FROM inbox WHERE created_at < ?`,
				nanos(now.Add(-r.InboxMaxAge))); err != nil {
				return err
			}
		}
		if r.InboxMaxEntries > 0 {
			if _, err := exec(`INSERT OR IGNORE INTO temp.doomed SELECT seq FROM (
				SELECT seq, row_number() OVER (PARTITION BY principal ORDER BY seq DESC) AS n FROM inbox
			) WHERE n > ?`, r.InboxMaxEntries); err != nil {
				return err
			}
		}
		// Handler runs not yet done keep their deliveries.
		if _, err := exec(`DELETE FROM temp.doomed WHERE seq IN (SELECT inbox_seq FROM handler_jobs)`); err != nil {
			return err
		}
		if _, err := exec(`UPDATE subscriptions
			SET delivered_base = delivered_base + d.n,
				last_delivered_base = max(coalesce(last_delivered_base, d.last), d.last)
			FROM (SELECT j.value AS subscription_id, sum(` + deliveredEvents + `) AS n, max(i.created_at) AS last
				FROM inbox i, json_each(i.subscription_ids) j
				WHERE i.seq IN (SELECT seq FROM temp.doomed) AND i.kind IN ('event', 'batch')
				GROUP BY j.value) AS d
			WHERE subscriptions.id = d.subscription_id`); err != nil {
			return err
		}
		var err error
		if st.InboxEntries, err = exec(`DELETE FROM inbox WHERE seq IN (SELECT seq FROM temp.doomed)`); err != nil {
			return err
		}
		if r.DedupWindow > 0 {
			// NOT IN over the inbox (its events and its digests' events)
			// and the buffers is computed once, not per event.
			if st.Events, err = exec(`DELETE FROM events WHERE received_at < ?
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
			if _, err := exec(`DELETE FROM buffer WHERE subscription_id IN (
				SELECT id FROM subscriptions WHERE status = 'expired' AND expired_at < ?)`, cutoff); err != nil {
				return err
			}
			if st.Subscriptions, err = exec(`DELETE FROM subscriptions WHERE status = 'expired' AND expired_at < ?`,
				cutoff); err != nil {
				return err
			}
		}
		return nil
	})
	return st, err
}
