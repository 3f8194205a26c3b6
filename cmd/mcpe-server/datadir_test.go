package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDefaultDBPath(t *testing.T) {
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	got, err := defaultDBPath()
	if err != nil || got != filepath.Join(data, "mcpe-server", "mcpe.db") {
		t.Errorf("with XDG_DATA_HOME: %q, %v", got, err)
	}
	if runtime.GOOS != "linux" {
		return
	}
	home := t.TempDir()
	t.Setenv("XDG_DATA_HOME", "relative/ignored")
	t.Setenv("HOME", home)
	got, err = defaultDBPath()
	if err != nil || got != filepath.Join(home, ".local", "share", "mcpe-server", "mcpe.db") {
		t.Errorf("with HOME: %q, %v", got, err)
	}
	t.Setenv("HOME", "")
	if _, err := defaultDBPath(); err == nil || !strings.Contains(err.Error(), "pass --db PATH") {
		t.Errorf("without HOME: %v; want advice to pass --db", err)
	}
}

// TestFirstRunCreatesDatabase serves once on stdio with no --db (stdin is
// empty, so the client "disconnects" at once) and checks that the database
// was created under the data directory.
func TestFirstRunCreatesDatabase(t *testing.T) {
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	code, _, stderr := cli(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	path := filepath.Join(data, "mcpe-server", "mcpe.db")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not created at %s: %v\n%s", path, err, stderr)
	}
	if !strings.Contains(stderr, path) {
		t.Errorf("the log does not say where the database is: %s", stderr)
	}
}
