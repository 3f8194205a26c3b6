package bash

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// The limits of every run. A handler program is a short command run for one
// event; they leave room for a shell pipeline or a tool with a thread per
// core, and stop a fork bomb, a runaway allocation or a file that fills the
// disk long before they hurt the server.
const (
	// DefaultMaxMemoryBytes bounds each process's data: its heap and other
	// private writable memory (RLIMIT_DATA), unless Limits says otherwise.
	DefaultMaxMemoryBytes = 1 << 30
	// maxProcesses bounds the processes and threads (RLIMIT_NPROC) of a
	// run in a user namespace of its own, where only the run's count;
	// without one they would include the server's own, so none is set.
	maxProcesses = 128
	// maxOpenFiles bounds each process's open files (RLIMIT_NOFILE).
	maxOpenFiles = 256
)

// maxFileBytes bounds the size of a file a process writes (RLIMIT_FSIZE);
// one that writes past it is killed by SIGXFSZ. Tests lower it.
var maxFileBytes int64 = 64 << 20

// NoLimit as Limits.MemoryBytes leaves the memory as the server's children
// get it.
const NoLimit = -1

// Limits bound the resources of a command's program with setrlimit: they are
// set on the program's own process, inside the sandbox when there is one,
// and what it starts inherits them. Every run also gets no core dump
// (RLIMIT_CORE 0), which would copy the memory of a program that read the
// event, and the limits above. A limit above the server's own hard limit is
// lowered to it.
type Limits struct {
	// MemoryBytes bounds each process's heap and other private writable
	// memory (RLIMIT_DATA); unlike RLIMIT_AS it does not count address
	// space reserved and never used, which runtimes such as Go's, Java's
	// or Node's reserve by the gigabyte. Zero: DefaultMaxMemoryBytes
	// (1 GiB).
	MemoryBytes int64
}

// validate checks l, named field in errors.
func (l Limits) validate(field string) error {
	if l.MemoryBytes < NoLimit {
		return mcpe.Invalid(field+".memoryBytes", "is %d; give a positive number of bytes, -1 for no limit, or leave it out for %d", l.MemoryBytes, DefaultMaxMemoryBytes)
	}
	return nil
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
	// limitNprocUserns is RLIMIT_NPROC, set only when the helper runs in
	// a user namespace other than the initial one.
	limitNprocUserns = "nproc-userns"
)

// spec returns the limits as the helper's argument: name=value pairs joined
// by commas.
func (l Limits) spec() string {
	pairs := []string{limitCore + "=0"}
	if data := cmp.Or(l.MemoryBytes, DefaultMaxMemoryBytes); data != NoLimit {
		pairs = append(pairs, limitData+"="+strconv.FormatInt(data, 10))
	}
	return strings.Join(append(pairs, fmt.Sprintf("%s=%d,%s=%d,%s=%d",
		limitFsize, maxFileBytes, limitNofile, maxOpenFiles, limitNprocUserns, maxProcesses)), ",")
}
