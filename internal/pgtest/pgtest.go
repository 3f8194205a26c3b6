// Package pgtest runs a throwaway PostgreSQL cluster for tests: one per test
// binary, started on first use on a Unix socket in a temporary directory, with
// a fresh database for each test. When the PostgreSQL binaries cannot be
// found the test is skipped, or fails when CI=true.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.Database(t) // postgres://postgres@/t1?host=/tmp/...
//	}
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Install says how to get the binaries when they are missing.
const Install = "install PostgreSQL (apt-get install postgresql) or put initdb, pg_ctl and postgres on PATH"

var (
	once    sync.Once
	shared  *Cluster
	started error
	dbs     atomic.Int64
	// inMain is set by Main: without it nothing would stop the cluster.
	inMain bool
)

// Main runs the tests of m and stops the cluster if one was started. Call
// it from TestMain.
func Main(m *testing.M) int {
	inMain = true
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		}
	}
	return code
}

// Database creates a new, empty database in the shared cluster (started on
// first use) and returns its URL. Without PostgreSQL binaries it skips t,
// or fails it when the environment variable CI is "true".
func Database(t testing.TB) string {
	t.Helper()
	if !inMain {
		t.Fatal("pgtest: the package's TestMain must run pgtest.Main, which stops the cluster once the tests end")
	}
	once.Do(func() {
		dir, err := FindBin()
		if err != nil {
			started = err
			return
		}
		shared, started = Start(dir)
	})
	if errors.Is(started, errNoBinaries) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pgtest: %v (CI=true: PostgreSQL is required)", started)
		}
		t.Skipf("pgtest: %v", started)
	}
	if started != nil {
		t.Fatalf("pgtest: %v", started)
	}
	name := fmt.Sprintf("t%d", dbs.Add(1))
	if err := shared.CreateDatabase(context.Background(), name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return shared.URL(name)
}

var errNoBinaries = errors.New("PostgreSQL binaries (initdb, pg_ctl, postgres) not found on PATH, in /usr/local/bin or /usr/lib/postgresql/*/bin; " + Install)

// FindBin returns the directory that holds initdb, pg_ctl and postgres:
// the directory of the initdb on PATH (symbolic links followed), else
// /usr/local/bin, else the newest /usr/lib/postgresql/*/bin.
func FindBin() (string, error) {
	var candidates []string
	if p, err := exec.LookPath("initdb"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/local/bin/initdb", "/usr/local/pgsql/bin/initdb")
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(debian, func(i, j int) bool { return version(debian[i]) > version(debian[j]) })
	candidates = append(candidates, debian...)
	for _, c := range candidates {
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		dir := filepath.Dir(real)
		if isExec(filepath.Join(dir, "pg_ctl")) && isExec(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", errNoBinaries
}

// version is the major version in a /usr/lib/postgresql/N/bin path.
func version(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

func isExec(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}

// Cluster is a running PostgreSQL server owned by a test binary.
type Cluster struct {
	bin, dir string
	cred     *syscall.Credential
}

// port only names the socket file; nothing listens on TCP.
const port = 5432

// Start initialises a cluster in a new temporary directory with the
// binaries in bin and starts it, listening on a Unix socket only, with
// fsync off. As root, it runs them as the user nobody, since initdb
// refuses to run as root.
func Start(bin string) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		if c.cred, err = nobody(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := c.run("initdb", "--no-locale", "--encoding=UTF8", "--auth=trust", "--username=postgres",
		"--no-sync", "-D", c.data()); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -p %d -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
		dir, port)
	if err := c.run("pg_ctl", "start", "-w", "-t", "60", "-D", c.data(), "-l", filepath.Join(dir, "log"), "-o", opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w\nserver log:\n%s", err, log)
	}
	return c, nil
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// nobody returns the credentials of the user nobody.
func nobody() (*syscall.Credential, error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs an unprivileged user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// run runs one of the binaries, as c.cred when set.
func (c *Cluster) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// URL returns the URL of database name.
func (c *Cluster) URL(name string) string {
	q := url.Values{"host": {c.dir}, "port": {strconv.Itoa(port)}}
	return (&url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/" + name, RawQuery: q.Encode()}).String()
}

// CreateDatabase creates an empty database.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// Stop stops the server and removes its directory.
func (c *Cluster) Stop() error {
	err := c.run("pg_ctl", "stop", "-w", "-m", "immediate", "-D", c.data())
	return errors.Join(err, os.RemoveAll(c.dir))
}
