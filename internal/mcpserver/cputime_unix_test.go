//go:build unix

package mcpserver_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used so
// far, or false where it cannot be read. Benchmarks report it per operation:
// unlike the elapsed time it does not grow when other processes share the
// machine.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
