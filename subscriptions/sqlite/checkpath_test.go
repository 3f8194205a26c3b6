//go:build unix

package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// TestCheckPath checks what CheckPath says of each kind of path, and that
// it creates nothing.
func TestCheckPath(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := file("empty.db", "")
	notes := file("notes.txt", "not a database")
	fifo := filepath.Join(dir, "fifo.db")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	db := filepath.Join(dir, "ok.db")
	s, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, tc := range []struct{ path, want string }{
		{sqlite.Memory, ""},
		{db, ""},
		{filepath.Join(dir, "new.db"), ""},
		{filepath.Join(dir, "a", "b", "new.db"), ""},
		{dir, fmt.Sprintf("database %q is a directory; give the path of a file in it, such as %q", dir, filepath.Join(dir, "mcpe.db"))},
		{fifo, fmt.Sprintf("database %q is not a regular file (p---------); give the path of a database file", fifo)},
		{empty, fmt.Sprintf("database %q exists but is empty (0 bytes), so it is no database this server made; move it away or remove it, and a new one is created", empty)},
		{filepath.Join(notes, "x.db"), fmt.Sprintf("database %q: stat %s: not a directory", filepath.Join(notes, "x.db"), filepath.Join(notes, "x.db"))},
	} {
		err := sqlite.CheckPath(tc.path)
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && got != tc.want {
			t.Errorf("CheckPath(%q) = %v; want %q", tc.path, err, tc.want)
		}
	}
	for _, p := range []string{filepath.Join(dir, "new.db"), filepath.Join(dir, "a")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("CheckPath created %s (%v)", p, err)
		}
	}
}
