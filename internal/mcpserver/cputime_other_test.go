//go:build !unix

package mcpserver_test

import "time"

// processCPU cannot read the process's CPU time on this system.
func processCPU() (time.Duration, bool) { return 0, false }
