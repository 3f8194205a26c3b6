package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"

	"github.com/mcpe-server/mcpe-server/subscriptions/postgres"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// defaultDBPath returns the database file under the user's data directory:
// $XDG_DATA_HOME or ~/.local/share on Unix, ~/Library/Application Support on
// macOS, %AppData% on Windows.
func defaultDBPath() (string, error) {
	const app, file = "mcpe-server", "mcpe.db"
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, app, file), nil
	}
	switch runtime.GOOS {
	case "darwin", "windows":
		d, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(d, app, file), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", errors.New("cannot find a data directory (no $XDG_DATA_HOME or $HOME); pass --db PATH")
	}
	return filepath.Join(home, ".local", "share", app, file), nil
}

// privatePaths lists what no handler program may see: the database and its
// directory, the configuration file, and the default
// data directory (where another database may be).
func privatePaths(db, cfgPath string) []string {
	var out []string
	add := func(p string) {
		if abs, err := filepath.Abs(p); p != "" && err == nil {
			out = append(out, abs)
		}
	}
	if db != "" && db != sqlite.Memory && !postgres.IsURL(db) {
		add(db) // the sandbox hides its -wal, -shm and -journal with it
		add(filepath.Dir(db))
	}
	add(cfgPath)
	if d, err := defaultDBPath(); err == nil {
		add(filepath.Dir(d))
	}
	return out
}
