//go:build unix

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

// This file tells whether another process has the database open: each
// process holds a shared flock on <database>.lock for as long as it has the
// database open, and one that cannot take it exclusively at open finds
// another there.

// joinProcesses takes this process's place among those that have the
// database at path open, and reports whether another has it open too. The
// returned file holds the lock until it is closed.
func joinProcesses(path string) (lock *os.File, others bool, err error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	fd := int(f.Fd())
	switch err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		// Alone: keep a shared lock, so that the next one finds this one.
	case errors.Is(err, syscall.EWOULDBLOCK):
		others = true
	default:
		f.Close()
		return nil, false, err
	}
	if err := syscall.Flock(fd, syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, false, err
	}
	return f, others, nil
}
