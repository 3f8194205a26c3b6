package sqlite

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// This file tells a follower (subscriptions.Notifier) at once when a
// process sharing the database commits: every commit appends to the
// write-ahead log, and inotify reports the write. The directory is watched,
// not the file, so that a log deleted and made again (SQLite removes it when
// the last connection closes) is still seen.

// watchWrites starts reporting writes to the database's write-ahead log on
// ch until stop is closed. It fails where inotify is not available; the
// follower then only polls.
func watchWrites(path string, ch chan<- struct{}, stop <-chan struct{}) error {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return err
	}
	if _, err := syscall.InotifyAddWatch(fd, filepath.Dir(path), syscall.IN_MODIFY|syscall.IN_CREATE); err != nil {
		syscall.Close(fd)
		return err
	}
	// A non-blocking descriptor in an *os.File reads through the runtime's
	// poller, and closing it ends a read in progress.
	f := os.NewFile(uintptr(fd), "inotify")
	wal := filepath.Base(path) + "-wal"
	go func() {
		<-stop
		f.Close()
	}()
	go func() {
		buf := make([]byte, 16*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
		for {
			n, err := f.Read(buf)
			if err != nil {
				if !errors.Is(err, os.ErrClosed) {
					f.Close()
				}
				return
			}
			if walWritten(buf[:n], wal) {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}()
	return nil
}

// walWritten reports whether the inotify events in buf name the log.
func walWritten(buf []byte, wal string) bool {
	for len(buf) >= syscall.SizeofInotifyEvent {
		// struct inotify_event: wd, mask, cookie, len (uint32 each),
		// then len bytes of name, NUL-padded.
		size := binary.NativeEndian.Uint32(buf[12:16])
		end := syscall.SizeofInotifyEvent + int(size)
		if end > len(buf) {
			return false
		}
		name, _, _ := bytes.Cut(buf[syscall.SizeofInotifyEvent:end], []byte{0})
		if string(name) == wal {
			return true
		}
		buf = buf[end:]
	}
	return false
}
