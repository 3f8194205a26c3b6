//go:build !linux

package sqlite

import "errors"

// watchWrites is not available here: the follower polls.
func watchWrites(string, chan<- struct{}, <-chan struct{}) error {
	return errors.New("watching the write-ahead log needs Linux")
}
