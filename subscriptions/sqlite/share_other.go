//go:build !unix

package sqlite

import "os"

// joinProcesses cannot tell here whether another process has the database
// open: it says so, and subscription changes are always logged.
func joinProcesses(string) (*os.File, bool, error) { return nil, true, nil }
