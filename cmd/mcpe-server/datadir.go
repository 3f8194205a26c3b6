package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
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
