package sqlite_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
	"github.com/mcpe-server/mcpe-server/subscriptions/storetest"
)

func TestOpenExplainsBadPaths(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{dir, "is a directory; give the path of a file in it, such as"},
		{empty, "exists but is empty (0 bytes), so it is no database this server made"},
		{notDB, "it is not an SQLite database, or it is damaged"},
	} {
		s, err := sqlite.Open(t.Context(), tc.path)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", tc.path)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("Open(%q) = %v; want the path and %q", tc.path, err, tc.want)
		}
	}
}

// TestOpenKeepsTheDatabasePrivate checks that a new database and its
// directory are the server user's only, and that an existing database
// readable by others is made private.
func TestOpenKeepsTheDatabasePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "mcpe.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, info.Mode().Perm(), err, want)
		}
	}
	os.Chmod(path, 0o644)
	s, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("an existing database left at mode %v, want 0600", info.Mode().Perm())
	}
}

func publishOne(t *testing.T, s subscriptions.Store, n int, data string) error {
	ev := mcpe.Event{ID: fmt.Sprintf("00000000-0000-4000-9000-%012d", n), Type: "x", Data: json.RawMessage(data),
		Metadata: mcpe.Metadata{Priority: mcpe.PriorityNormal, Timestamp: time.Unix(0, 0).UTC()}}
	raw, _ := json.Marshal(ev)
	_, err := storetest.PublishOne(t.Context(), s, &ev, raw, nil, time.Unix(0, 0))
	return err
}

// TestRemovedDatabaseIsNoticed checks that a database removed or replaced
// while the store runs makes it refuse writes and report itself unhealthy,
// instead of accepting what would be gone at the next start.
func TestRemovedDatabaseIsNoticed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(path string) error
		want   string
	}{
		{"removed", os.Remove, "was removed while the server ran"},
		{"removed WAL", func(p string) error { return os.Remove(p + "-wal") }, "-wal\" was removed"},
		{"replaced", func(p string) error {
			// In one step (rename over it): a check between a removal and a
			// new file would rightly say "removed".
			other := p + ".other"
			if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
				return err
			}
			return os.Rename(other, p)
		}, "was replaced by another file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcpe.db")
			s, err := sqlite.OpenWith(t.Context(), path, &sqlite.Options{CheckEvery: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := publishOne(t, s, 1, `{}`); err != nil {
				t.Fatal(err)
			}
			if err := s.Health(); err != nil {
				t.Fatalf("Health before: %v", err)
			}
			if err := tc.damage(path); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for s.Health() == nil {
				if time.Now().After(deadline) {
					t.Fatal("the damage was not noticed")
				}
				time.Sleep(5 * time.Millisecond)
			}
			err = publishOne(t, s, 2, `{}`)
			if !errors.Is(err, subscriptions.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Publish after the damage: %v; want ErrUnavailable saying %q", err, tc.want)
			}
		})
	}
}

// TestWALStaysBounded writes sixteen times the WAL limit as fast as it can,
// with readers reading all the while (which keeps passive checkpoints from
// starting the WAL over), and checks after every commit that the WAL stays
// near its bound.
func TestWALStaysBounded(t *testing.T) {
	const limit = 1 << 20
	path := filepath.Join(t.TempDir(), "mcpe.db")
	s, err := sqlite.OpenWith(t.Context(), path, &sqlite.Options{WALLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				s.ReadInbox(t.Context(), "alice", 0, 100)
			}
		}()
	}
	defer func() { close(done); readers.Wait() }()
	data := `{"blob":"` + strings.Repeat("x", 4000) + `"}`
	var most int64
	for n := 1; n <= 16*limit/4000; n++ {
		if err := publishOne(t, s, n, data); err != nil {
			t.Fatal(err)
		}
		if info, err := os.Stat(path + "-wal"); err == nil {
			most = max(most, info.Size())
		}
	}
	// A look every 64 commits of about 8 KiB of pages each, and the commits
	// made while readers pin the WAL: on a loaded 2-core machine (the suite
	// running beside three busy loops) it reached 3.5 times the limit, where
	// 2 times was once the bound and failed a CI run. What matters is that it
	// follows the limit, not the 16 times as much written.
	if bound := int64(6 * limit); most > bound {
		t.Errorf("the WAL reached %d bytes; the bound is %d (limit %d)", most, bound, limit)
	}
	t.Logf("WAL at most %d bytes with a limit of %d", most, limit)
}
