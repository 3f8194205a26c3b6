// Package postgres is the subscriptions.Store on PostgreSQL, through
// github.com/jackc/pgx/v5 and its pool. Several servers may share one
// database and behave as one (subscriptions.Shared): migrations run once
// under an advisory lock, inbox appends take their principals' rows in
// order, inbox entries and subscription changes are numbered in commit
// order across processes (shared.go), and a transaction that loses a
// deadlock is run again.
package postgres

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is a subscriptions.Store backed by PostgreSQL.
type Store struct {
	// Core is the logic both stores share, over conn.
	storecore.Core
	pool *pgxpool.Pool
	// gather is whether the last publish waited for its principals' rows
	// (publish.go).
	gather atomic.Bool
	// where names the database for errors, without its password.
	where string
	// health is the outcome of the latest check that the database answers
	// (nil: it did); stop and done end the checks, once.
	health    atomic.Pointer[error]
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// name is this store's application_name, which its notifications
	// carry; connConfig opens the listening connection (written.go).
	// beside is whether other servers were connected to the database when
	// this one opened it; besideErr why that could not be told (beside is
	// then true).
	beside      bool
	besideErr   error
	name        string
	connConfig  *pgx.ConnConfig
	writtenOnce sync.Once
	written     chan struct{}
	stopListen  context.CancelFunc
	listening   sync.WaitGroup
	listenErr   atomic.Pointer[error]
	// watched is the md5s of the principals whose inbox entries wake
	// (nil: all), buckets their first bytes (the channels listened to);
	// hashes maps those principals to them; rewatch tells the listening
	// connection that buckets changed (written.go).
	watched atomic.Pointer[map[string]bool]
	buckets atomic.Pointer[[256]bool]
	rewatch chan struct{}
	watchMu sync.Mutex
	hashes  map[string]string
}

var (
	_ subscriptions.Counts     = (*Store)(nil)
	_ subscriptions.Store      = (*Store)(nil)
	_ subscriptions.Companions = (*Store)(nil)
	_ subscriptions.Runs       = (*Store)(nil)
)

// healthEvery is how often a Store checks that its database answers.
const healthEvery = 5 * time.Second

// healthTimeout bounds one check: a database that has not answered by then
// is reported unreachable.
const healthTimeout = 3 * time.Second

// IsURL reports whether s names a PostgreSQL database (a postgres:// or
// postgresql:// URL) rather than a file.
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql"))
}

// Redact returns rawURL without its password, for logs and errors.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(a URL that cannot be parsed)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Open connects to the database at rawURL (postgres://user@host/db) and
// applies the migrations that it has not seen, under an advisory lock, so
// that servers starting together migrate once. An error names the database
// without its password. The pool opens pgx's default of connections (the
// larger of 4 and the number of CPUs), or pool_max_conns in the URL.
func Open(ctx context.Context, rawURL string) (*Store, error) { return open(ctx, rawURL, 0, 0) }

// open is Open with a pool of at most maxConns and a health check every
// checkEvery; zero keeps Open's.
func open(ctx context.Context, rawURL string, maxConns int32, checkEvery time.Duration) (*Store, error) {
	if !IsURL(rawURL) {
		return nil, fmt.Errorf("postgres: %q is not a postgres:// or postgresql:// URL", Redact(rawURL))
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		// pgconn's parse errors show the URL with its password hidden.
		return nil, fmt.Errorf("postgres: cannot parse the database URL (want postgres://user[:password]@host[:port]/database[?sslmode=...]): %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	name := processName()
	cfg.ConnConfig.RuntimeParams["application_name"] = name
	// A server that stops mid-transaction (frozen, its machine paused)
	// would hold its principals' rows from the others until it resumes:
	// the database ends its session instead, unless the URL says otherwise.
	if _, ok := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !ok {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = "10s"
	}
	where := describe(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: cannot reach %s: %w", where, err)
	}
	s := &Store{pool: pool, where: where, stop: make(chan struct{}), done: make(chan struct{}),
		name: name, connConfig: cfg.ConnConfig.Copy(), rewatch: make(chan struct{}, 1)}
	s.Core = storecore.Core{Name: "postgres", DB: conn{pool}, Tx: s.coreTx, Q: queries}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %s: %w", where, err)
	}
	if err := pool.QueryRow(ctx, othersQuery, name).Scan(&s.beside); err != nil {
		// Unable to tell, take it that there are: that can only keep what
		// sessions of earlier runs left, never delete a live one's.
		s.beside, s.besideErr = true, fmt.Errorf("postgres: look for other servers in pg_stat_activity: %w", err)
	}
	go s.checkHealth(cmp.Or(checkEvery, healthEvery))
	return s, nil
}

// Health reports whether the database answered the latest check (a SELECT
// 1 every healthEvery, through the pool, at most healthTimeout
// each): nil when it did, else why not. It returns at once: the check runs
// in the background, so a database that hangs does not hang /healthz.
func (s *Store) Health() error {
	if p := s.health.Load(); p != nil {
		return *p
	}
	return nil
}

// checkHealth checks that the database answers every interval, until
// Close.
func (s *Store) checkHealth(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
		var one int
		err := s.pool.QueryRow(ctx, `SELECT 1`).Scan(&one)
		cancel()
		if err != nil {
			err = fmt.Errorf("postgres: %s does not answer (SELECT 1, given %v): %w", s.where, healthTimeout, err)
			s.health.Store(&err)
		} else {
			s.health.Store(nil)
		}
	}
}

// describe names a database as host, port, user and name, never the
// password.
func describe(c *pgx.ConnConfig) string {
	return fmt.Sprintf("database %q on %s port %d as user %q", c.Database, c.Host, c.Port, c.User)
}

// Close stops the health checks and closes the pool. Calling it again does
// nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		// Waits for a Written in progress, and keeps any later one from
		// listening.
		s.writtenOnce.Do(func() { s.written = make(chan struct{}, 1) })
		if s.stopListen != nil {
			s.stopListen()
		}
		s.listening.Wait()
		s.pool.Close()
	})
	return nil
}

// migrationLock is the key of the advisory lock held while migrating
// (the bytes "mcpemigr").
const migrationLock = 0x6d63_7065_6d69_6772

// migrate applies the embedded migrations the database has not seen, in
// one transaction that holds an advisory lock, recording each version in
// schema_migrations.
func (s *Store) migrate(ctx context.Context) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var version int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&version); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		return storecore.Migrate(migrations, version, func(n int, name, body string) error {
			if _, err := tx.Exec(ctx, body); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, n, name)
			return err
		})
	})
}

// maxAttempts is how many times tx runs a transaction that lost a deadlock
// or a serialization conflict.
const maxAttempts = 5

// tx runs f in a transaction and commits it; f may run again, from the
// start, when PostgreSQL aborts it to break a deadlock.
func (s *Store) tx(ctx context.Context, f func(pgx.Tx) error) error {
	return s.retry(ctx, func() error { return pgx.BeginFunc(ctx, s.pool, f) })
}

// retry runs the transaction run until it ends without a deadlock or
// serialization failure, at most maxAttempts times.
func (s *Store) retry(ctx context.Context, run func() error) error {
	for attempt := 1; ; attempt++ {
		err := run()
		if err == nil || attempt == maxAttempts || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * time.Millisecond):
		}
	}
}

// retryable reports whether err is a deadlock or serialization failure,
// which running the transaction again resolves.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// lockPrincipals takes the rows of principals (creating missing ones) for
// the rest of tx, in name order so that transactions never wait on each
// other in a circle. Every inbox append holds its principals' rows, and
// draws its entries' numbers from them (each principal's inbox is
// numbered on its own, shared.go): entries of a principal then commit in
// number order.
func lockPrincipals(ctx context.Context, tx pgx.Tx, principals []string) error {
	b := &pgx.Batch{}
	if queueLock(b, principals, true); b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("lock principals: %w", err)
	}
	return nil
}

// queueLock queues lockPrincipals' statements in b, so that a publish
// takes the rows in the round trip that starts its work; without ensure,
// missing rows are not made.
func queueLock(b *pgx.Batch, principals []string, ensure bool) {
	if len(principals) == 0 {
		return
	}
	names := sortedSet(principals)
	if ensure {
		b.Queue(ensurePrincipals, names)
	}
	cond, args := principalIn(names)
	b.Queue(`SELECT principal FROM principals WHERE `+cond+` ORDER BY principal FOR NO KEY UPDATE`, args...)
}

// principalIn returns the condition that principal is one of names, $1,
// and its arguments. No name and one name need no array: PostgreSQL then
// plans the statement once for all calls, where it plans one with an
// array anew at each call whose array is shorter than it guesses.
func principalIn(names []string) (cond string, args []any) {
	switch len(names) {
	case 0:
		return "false", nil
	case 1:
		return "principal = $1", []any{names[0]}
	}
	return "principal = ANY($1)", []any{names}
}

// ensurePrincipals makes the rows of the principals $1 that have none. It
// leaves those that have one alone, without waiting: an INSERT's conflict
// check would wait for every transaction that holds the row.
const ensurePrincipals = `INSERT INTO principals (principal) SELECT p FROM unnest($1::text[]) AS u(p)
	WHERE NOT EXISTS (SELECT FROM principals WHERE principal = u.p) ON CONFLICT DO NOTHING`

// sortedSet returns the distinct strings of list, sorted.
func sortedSet(list []string) []string {
	out := slices.Clone(list)
	slices.Sort(out)
	return slices.Compact(out)
}

// CheckURL says whether rawURL is a database URL this store can use,
// without connecting.
func CheckURL(rawURL string) error {
	if !IsURL(rawURL) {
		return fmt.Errorf("postgres: %q is not a postgres:// or postgresql:// URL", Redact(rawURL))
	}
	if _, err := pgxpool.ParseConfig(rawURL); err != nil {
		return fmt.Errorf("postgres: cannot parse the database URL (want postgres://user[:password]@host[:port]/database[?sslmode=...]): %w", err)
	}
	return nil
}

// othersQuery tells whether a server other than the one named $1 (each
// names its connections with processName) is connected to this database.
const othersQuery = `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
	WHERE datname = current_database() AND application_name LIKE 'mcpe-server/%' AND application_name <> $1)`

// OpenedBeside implements subscriptions.Companions: whether another server
// was connected to the database when this one opened it.
func (s *Store) OpenedBeside() (bool, error) { return s.beside, s.besideErr }
