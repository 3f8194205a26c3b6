// Package proc reads what the benchmarks measure of a server process from
// /proc (Linux): its CPU time and its resident memory.
package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUTime returns the user and system CPU time of process pid, or 0 when it
// cannot be read.
func CPUTime(pid int) time.Duration {
	cpu, _, _ := stat(pid)
	return cpu
}

// Family returns the CPU time of process pid and of each of its children,
// by pid (a PostgreSQL postmaster's are its backends and workers); nil for
// no pid (0).
func Family(pid int) map[int]time.Duration {
	if pid <= 0 {
		return nil
	}
	out := make(map[int]time.Duration)
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if cpu, parent, ok := stat(p); ok && (p == pid || parent == pid) {
			out[p] = cpu
		}
	}
	return out
}

// stat reads the CPU time and the parent of process pid; ok is false when
// it cannot be read.
func stat(pid int) (cpu time.Duration, parent int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	parent, _ = strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / hz, parent, true
}

// RSS returns the resident set size of process pid in megabytes, or 0 when
// it cannot be read.
func RSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			return kb / 1024
		}
	}
	return 0
}
