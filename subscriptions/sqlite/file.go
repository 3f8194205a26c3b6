package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// preparePath checks the database path before SQLite opens it, so that a
// mistake is told in the operator's words: a directory, a file this start
// did not make that is empty, a path that cannot be written (permissions, a
// read-only file system). It creates a missing directory (mode 0700) and
// file (0600), and tightens an existing database to 0600.
func preparePath(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("database %q: cannot create its directory %q: %w", path, dir, explainOS(err))
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("database %q: cannot create it: %w", path, explainOS(err))
		}
		return f.Close()
	}
	if err := checkExisting(path, info, err); err != nil {
		return err
	}
	if info.Mode().Perm()&0o077 != 0 {
		// It holds webhook secrets: the server's user only.
		os.Chmod(path, info.Mode().Perm()&0o700)
	}
	return nil
}

// checkExisting returns what keeps the file at path, which os.Stat
// returned info and err for, from being the database: the stat's error, a
// directory, not a regular file, empty, or not writable.
func checkExisting(path string, info os.FileInfo, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("database %q: %w", path, explainOS(err))
	case info.IsDir():
		return fmt.Errorf("database %q is a directory; give the path of a file in it, such as %q", path, filepath.Join(path, "mcpe.db"))
	case !info.Mode().IsRegular():
		return fmt.Errorf("database %q is not a regular file (%v); give the path of a database file", path, info.Mode().Type())
	case info.Size() == 0:
		return fmt.Errorf("database %q exists but is empty (0 bytes), so it is no database this server made; move it away or remove it, and a new one is created", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("database %q: cannot open it for writing: %w", path, explainOS(err))
	}
	f.Close()
	return nil
}

// explainOS says in words what a file-system error means for the server.
func explainOS(err error) error {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("permission denied: the server's user (uid %d) may not write there; fix the owner or mode, or choose another path with --db (%w)", os.Getuid(), err)
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("the file system is read-only; choose a path on a writable one with --db (%w)", err)
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("the disk is full (%w)", err)
	}
	return err
}

// explainOpen says what went wrong when SQLite could not use a file.
func explainOpen(err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return explainOS(err)
	case strings.Contains(msg, "file is not a database"), strings.Contains(msg, "malformed"):
		return fmt.Errorf("it is not an SQLite database, or it is damaged: %w", err)
	case strings.Contains(msg, "readonly"), strings.Contains(msg, "read-only"):
		return fmt.Errorf("it can only be read (its file, its -wal or -shm, or its directory is read-only): %w", err)
	}
	return err
}

// fileWatch remembers which files the database and its WAL are, so that
// their removal or replacement while the server runs is noticed: SQLite
// would go on writing to the unlinked files, and what it accepts would be
// gone at the next start.
type fileWatch struct {
	path string
	main os.FileInfo

	mu  sync.Mutex
	wal os.FileInfo // nil until the WAL is first seen
}

func watchFile(path string) (*fileWatch, error) {
	main, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("database %q: %w", path, explainOS(err))
	}
	w := &fileWatch{path: path, main: main}
	w.wal, _ = os.Stat(path + "-wal")
	return w, nil
}

// check returns an error wrapping subscriptions.ErrUnavailable when the
// database or its WAL is no longer the file opened.
func (w *fileWatch) check() error {
	if err := w.same(w.path, w.main); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wal == nil {
		w.wal, _ = os.Stat(w.path + "-wal")
		return nil
	}
	return w.same(w.path+"-wal", w.wal)
}

func (w *fileWatch) same(path string, was os.FileInfo) error {
	now, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %q was removed while the server ran; nothing more can be kept, restart the server (a new database is created if the old one is gone)", subscriptions.ErrUnavailable, path)
	case err != nil:
		return fmt.Errorf("%w: %q cannot be checked: %v", subscriptions.ErrUnavailable, path, err)
	case !os.SameFile(was, now):
		return fmt.Errorf("%w: %q was replaced by another file while the server ran; restart the server to use it", subscriptions.ErrUnavailable, path)
	}
	return nil
}

// walSize returns the size of the WAL file, or 0.
func (w *fileWatch) walSize() int64 {
	info, err := os.Stat(w.path + "-wal")
	if err != nil {
		return 0
	}
	return info.Size()
}

// CheckPath says whether a server could keep its database at path, without
// creating or changing anything: an existing file must be a non-empty
// regular file the server's user may write, in a directory it may write
// (SQLite makes the -wal and -shm files there); a missing one needs its
// nearest existing directory to be writable.
func CheckPath(path string) error {
	if path == Memory {
		return nil
	}
	info, err := os.Stat(path)
	if !errors.Is(err, fs.ErrNotExist) {
		if err := checkExisting(path, info, err); err != nil {
			return err
		}
		if err := writable(filepath.Dir(path)); err != nil {
			return fmt.Errorf("database %q: its directory cannot be written, where SQLite keeps the -wal and -shm files: %w", path, explainOS(err))
		}
		return nil
	}
	dir := filepath.Dir(path)
	for {
		d, err := os.Stat(dir)
		if err == nil {
			if !d.IsDir() {
				return fmt.Errorf("database %q: %q is not a directory", path, dir)
			}
			break
		}
		if parent := filepath.Dir(dir); parent != dir {
			dir = parent
			continue
		}
		return fmt.Errorf("database %q: %w", path, err)
	}
	if err := writable(dir); err != nil {
		return fmt.Errorf("database %q does not exist and cannot be created in %q: %w", path, dir, explainOS(err))
	}
	return nil
}

// writable reports whether the server's user may create files in dir.
func writable(dir string) error {
	const wOK = 2 // W_OK
	if err := syscall.Access(dir, wOK); err != nil {
		return &fs.PathError{Op: "write", Path: dir, Err: err}
	}
	return nil
}
