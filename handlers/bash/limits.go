package bash

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Defaults for Limits. A handler program is a short command run for one
// event; the defaults leave room for a shell pipeline or a tool with a
// thread per core, and stop a fork bomb, a runaway allocation or a file
// that fills the disk long before they hurt the server.
const (
	// DefaultMaxProcesses bounds the processes and threads (RLIMIT_NPROC)
	// of a run in a user namespace of its own, where only the run's count.
	DefaultMaxProcesses = 128
	// DefaultMaxMemoryBytes bounds each process's data: its heap and other
	// private writable memory (RLIMIT_DATA).
	DefaultMaxMemoryBytes = 1 << 30
	// DefaultMaxFileBytes bounds the size of a file a process writes
	// (RLIMIT_FSIZE); one that writes past it is killed by SIGXFSZ.
	DefaultMaxFileBytes = 64 << 20
	// DefaultMaxOpenFiles bounds each process's open files (RLIMIT_NOFILE).
	DefaultMaxOpenFiles = 256
)

// NoLimit in a field of Limits leaves that resource as the server's
// children get it.
const NoLimit = -1

// Limits bound the resources of a command's program with setrlimit: they are
// set on the program's own process, inside the sandbox when there is one,
// and what it starts inherits them. Every run also gets no core dump
// (RLIMIT_CORE 0), which would copy the memory of a program that read the
// event. A limit above the server's own hard limit is lowered to it.
type Limits struct {
	// Processes is the most processes and threads the program's user may
	// have at once (RLIMIT_NPROC). The kernel counts them in the user
	// namespace: under bubblewrap, which gives the run one of its own,
	// they are the run's alone; without it they include the server's own
	// threads and everything else its user runs, and the limit does not
	// bind a user with CAP_SYS_RESOURCE or root. Zero: DefaultMaxProcesses
	// (128) in a user namespace of the run's own, no limit otherwise.
	Processes int
	// MemoryBytes bounds each process's heap and other private writable
	// memory (RLIMIT_DATA); unlike RLIMIT_AS it does not count address
	// space reserved and never used, which runtimes such as Go's, Java's
	// or Node's reserve by the gigabyte. Zero: DefaultMaxMemoryBytes
	// (1 GiB).
	MemoryBytes int64
	// FileBytes is the largest file a process may write (RLIMIT_FSIZE).
	// Zero: DefaultMaxFileBytes (64 MiB).
	FileBytes int64
	// OpenFiles bounds each process's open files (RLIMIT_NOFILE). Zero:
	// DefaultMaxOpenFiles (256).
	OpenFiles int
}

// validate checks l, named field in errors.
func (l Limits) validate(field string) error {
	check := func(key string, v, def int64, unit string) error {
		if v < NoLimit {
			return mcpe.Invalid(field+"."+key, "is %d; give a positive number%s, -1 for no limit, or leave it out for %d", v, unit, def)
		}
		return nil
	}
	if err := check("processes", int64(l.Processes), DefaultMaxProcesses, ""); err != nil {
		return err
	}
	if err := check("memoryBytes", l.MemoryBytes, DefaultMaxMemoryBytes, " of bytes"); err != nil {
		return err
	}
	if err := check("fileBytes", l.FileBytes, DefaultMaxFileBytes, " of bytes"); err != nil {
		return err
	}
	return check("openFiles", int64(l.OpenFiles), DefaultMaxOpenFiles, "")
}

// helperArg, as the first argument of the server's own executable and the
// value of helperMarkEnv in its environment, makes it the helper of a run
// (helper_linux.go) instead of the server. The variable, which the helper
// removes before the program runs, is set by the server alone: a model
// cannot set variables, so a command allowed to run the server's executable
// cannot be made the helper, which runs any program it is given.
const (
	helperArg     = "mcpe-bash-helper.v1"
	helperMarkEnv = "MCPE_BASH_HELPER"
)

// The helper's modes.
const (
	// helperExec sets the limits and executes the program: inside the
	// sandbox, and as the reaper's child.
	helperExec = "exec"
	// helperReap runs the program as its child through helperExec, kills
	// what the program leaves behind, and reports its wait status: without
	// the sandbox.
	helperReap = "reap"
)

// The names of the limits in the helper's argument.
const (
	limitCore   = "core"
	limitData   = "data"
	limitFsize  = "fsize"
	limitNofile = "nofile"
	limitNproc  = "nproc"
	// limitNprocUserns is RLIMIT_NPROC, set only when the helper runs in
	// a user namespace other than the initial one.
	limitNprocUserns = "nproc-userns"
)

// spec returns the limits as the helper's argument: name=value pairs joined
// by commas, the defaults filled in and NoLimit left out.
func (l Limits) spec() string {
	pairs := []string{limitCore + "=0"}
	add := func(name string, v, def int64) {
		switch {
		case v == 0:
			v = def
		case v == NoLimit:
			return
		}
		pairs = append(pairs, name+"="+strconv.FormatInt(v, 10))
	}
	add(limitData, l.MemoryBytes, DefaultMaxMemoryBytes)
	add(limitFsize, l.FileBytes, DefaultMaxFileBytes)
	add(limitNofile, int64(l.OpenFiles), DefaultMaxOpenFiles)
	switch l.Processes {
	case 0:
		add(limitNprocUserns, DefaultMaxProcesses, 0)
	default:
		add(limitNproc, int64(l.Processes), 0)
	}
	return strings.Join(pairs, ",")
}

// parseLimits reads a spec back: each name with its value.
func parseLimits(spec string) (map[string]uint64, error) {
	out := make(map[string]uint64)
	for pair := range strings.SplitSeq(spec, ",") {
		name, value, ok := strings.Cut(pair, "=")
		v, err := strconv.ParseUint(value, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("limit %q is not name=number", pair)
		}
		switch name {
		case limitCore, limitData, limitFsize, limitNofile, limitNproc, limitNprocUserns:
		default:
			return nil, fmt.Errorf("limit %q is not one this helper knows", name)
		}
		out[name] = v
	}
	return out, nil
}
