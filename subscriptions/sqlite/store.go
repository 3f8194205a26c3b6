// Package sqlite is the subscriptions.Store on SQLite, through the pure-Go
// modernc.org/sqlite driver: one file (or :memory:), WAL journal, busy
// timeout, and migrations embedded in the binary.
package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Memory is the path that opens a private in-memory database.
const Memory = ":memory:"

// Store is a subscriptions.Store backed by SQLite.
type Store struct {
	// Core is the logic both stores share, over conn.
	storecore.Core
	// w is the only connection that writes, so writers queue in Go instead
	// of spinning on SQLITE_BUSY; r serves reads concurrently (WAL).
	w, r *sql.DB
	// Prepared statements by query text, for each pool. A write statement
	// must be fetched before its transaction begins: the transaction holds
	// the only write connection, and preparing needs one.
	wstmts, rstmts stmtCache

	// commits counts write transactions, so the checkpointer knows when
	// there is something to do; stop and done end it.
	commits    atomic.Int64
	stop, done chan struct{}
	closeOnce  sync.Once
	closeErr   error

	opts options
	// file watches the database's files; lost is set, for good, once they
	// are gone or replaced.
	file *fileWatch
	lost atomic.Pointer[error]

	// processes is the lock held on <database>.lock while the database is
	// open (share); beside is whether other processes held it when this
	// one opened the database.
	processes *os.File
	beside    bool
	// path is the database file ("" in memory); written reports writes
	// to its log (Written), set up once.
	path        string
	writtenOnce sync.Once
	written     chan struct{}
}

const (
	// defaultWALLimit is the WAL size past which it is checkpointed and
	// truncated at once: under sustained writes the passive checkpoints
	// that run beside them cannot start the WAL over, and it would grow
	// without bound.
	defaultWALLimit = 64 << 20
	// defaultCheckEvery is how often the WAL is copied back into the
	// database and the database's files are checked.
	defaultCheckEvery = time.Second
)

// walCheckCommits is how many commits pass between looks at the WAL's size
// from the commit path, so that it is bounded however fast writes come.
const walCheckCommits = 64

// options replace, set by tests, defaultWALLimit and defaultCheckEvery
// when not zero.
type options struct {
	walLimit   int64
	checkEvery time.Duration
}

var (
	_ subscriptions.Counts     = (*Store)(nil)
	_ subscriptions.Store      = (*Store)(nil)
	_ subscriptions.Companions = (*Store)(nil)
	_ subscriptions.Runs       = (*Store)(nil)
)

// Open opens (creating if needed) the database at path and applies the
// migrations. Path may be Memory. A new database and its directory are made
// readable by the server's user only; an error names the path and says
// what is wrong with it.
func Open(ctx context.Context, path string) (*Store, error) { return open(ctx, path, options{}) }

func open(ctx context.Context, path string, o options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	o.walLimit = cmp.Or(o.walLimit, defaultWALLimit)
	o.checkEvery = cmp.Or(o.checkEvery, defaultCheckEvery)
	params := url.Values{}
	params.Add("_pragma", "busy_timeout(10000)")
	params.Add("_pragma", "foreign_keys(ON)")
	params.Add("_txlock", "immediate")
	// Statement journals (a multi-row INSERT that may fail halfway keeps
	// one) and temporary tables stay in memory: in a file they cost a
	// write(2) per page, the most of a small transaction.
	params.Add("_pragma", "temp_store(MEMORY)")
	if path == Memory {
		db, err := sql.Open("sqlite", "file::memory:?"+params.Encode())
		if err != nil {
			return nil, fmt.Errorf("open in-memory database: %w", err)
		}
		// Each connection to :memory: is its own database: keep one.
		db.SetMaxOpenConns(1)
		s := &Store{w: db, r: db, opts: o}
		if err := s.init(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("in-memory database: %w", err)
		}
		return s, nil
	}
	if err := preparePath(path); err != nil {
		return nil, err
	}
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "synchronous(NORMAL)")
	// Commits do not checkpoint (that would stall a publish for the time of
	// a checkpoint and its fsync); checkpoint runs beside them instead.
	params.Add("_pragma", "wal_autocheckpoint(0)")
	// A WAL that went past walLimit is cut back to it when it starts over.
	params.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", o.walLimit))
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
	s := &Store{w: w, r: r, opts: o, path: path}
	if err := s.init(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("database %q: %w", path, explainOpen(err))
	}
	if s.file, err = watchFile(path); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.share(ctx, path); err != nil {
		s.Close()
		return nil, fmt.Errorf("database %q: %w", path, err)
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.checkpoint()
	return s, nil
}

// share records, once another process has the database open too, that
// subscription changes are to be logged for the processes to follow
// (migration 0008): a process alone logs none.
func (s *Store) share(ctx context.Context, path string) error {
	lock, others, err := joinProcesses(path)
	if err != nil {
		return fmt.Errorf("lock %s.lock, by which the processes that share the database find each other: %w", path, err)
	}
	s.processes, s.beside = lock, others
	if !others {
		return nil
	}
	_, err = s.DB.Exec(ctx, `UPDATE meta SET value = '1' WHERE key = 'shared' AND value <> '1'`)
	return err
}

// OpenedBeside implements subscriptions.Companions: whether another process
// had the database file open when this one opened it (never in memory).
func (s *Store) OpenedBeside() (bool, error) { return s.beside, nil }

// checkpoint runs beside the writers until Close: every checkEvery it
// copies the WAL back into the database when there were commits, without
// blocking writers (PASSIVE), checks the database's files, and bounds the
// WAL (boundWAL), which the commit path also does every walCheckCommits
// commits.
func (s *Store) checkpoint() {
	defer close(s.done)
	t := time.NewTicker(s.opts.checkEvery)
	defer t.Stop()
	var seen int64
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if err := s.file.check(); err != nil {
			s.lost.CompareAndSwap(nil, &err) // every write is refused from now on
		}
		if n := s.commits.Load(); n != seen {
			seen = n
			// A failed checkpoint is retried at the next tick; the WAL only
			// grows meanwhile.
			s.r.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
		}
		s.boundWAL()
	}
}

// boundWAL checkpoints the WAL when it has passed walLimit, on the write
// connection: writers wait in Go for it rather than spin on SQLITE_BUSY,
// and readers are waited for (busy_timeout). Under sustained writes the
// passive checkpoints cannot start the WAL over; this does. It restarts
// the WAL rather than truncating it: the next commits write over blocks
// the file already has instead of growing it again from nothing, which
// under sustained ingest is about 5 % of the events accepted per second
// (journal_size_limit still cuts a WAL that went past it back to that).
func (s *Store) boundWAL() {
	if s.file.walSize() <= s.opts.walLimit {
		return
	}
	s.w.Exec(`PRAGMA wal_checkpoint(RESTART)`)
}

// Health reports whether the store can keep what it is given: an error
// once its files were removed or replaced while it ran.
func (s *Store) Health() error {
	if p := s.lost.Load(); p != nil {
		return *p
	}
	return nil
}

// init sets up the statement caches and the core, and migrates the schema.
func (s *Store) init(ctx context.Context) error {
	s.wstmts.db, s.rstmts.db = s.w, s.r
	s.Core = storecore.Core{Name: "sqlite", DB: conn{s: s}, Tx: s.coreTx, Q: queries}
	return s.migrate(ctx)
}

// stmtCache prepares each query once per pool.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// get returns the statement of query, preparing it on first use. The lock
// is not held while preparing: that waits for a connection, which a
// transaction may hold while it gets statements prepared earlier.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st := c.m[query]
	c.mu.Unlock()
	if st != nil {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare statement: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if had := c.m[query]; had != nil {
		st.Close()
		return had, nil
	}
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	c.m[query] = st
	return st, nil
}

// cached returns the statement of query if it is prepared, else nil.
func (c *stmtCache) cached(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
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

// prepare prepares the write statements of queries for a transaction that
// has not begun yet: once begun, it holds the only write connection.
func (s *Store) prepare(ctx context.Context, queries ...string) error {
	for _, q := range queries {
		if _, err := s.wstmts.get(ctx, numbered(q)); err != nil {
			return err
		}
	}
	return nil
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
	if s.processes != nil {
		s.processes.Close()
	}
	return err
}

// migrate applies the embedded migrations that the database has not seen,
// tracking progress in PRAGMA user_version.
func (s *Store) migrate(ctx context.Context) error {
	var version int
	if err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	return storecore.Migrate(migrations, version, func(n int, _, body string) error {
		return s.tx(ctx, func(tx *sql.Tx) error {
			// Another process sharing the file may have applied it
			// since: the transaction holds the write lock now.
			var now int
			if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&now); err != nil || now >= n {
				return err
			}
			if _, err := tx.ExecContext(ctx, body); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", n))
			return err
		})
	})
}

func (s *Store) tx(ctx context.Context, f func(*sql.Tx) error) error {
	if err := s.Health(); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.committed()
	return nil
}

// committed follows a commit of the writer's: every walCheckCommits
// commits the committer looks at the WAL, so that however fast writes come
// it passes walLimit by at most that many commits.
func (s *Store) committed() {
	if n := s.commits.Add(1); n%walCheckCommits == 0 && s.file != nil {
		s.boundWAL()
	}
}
