package bash

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// helperSupported tells whether runs go through the helper: its limits and
// its sub-reaper are Linux's.
const helperSupported = true

// init turns the process into the helper of a run when the server ran its
// own executable as one (helperArg first, helperMarkEnv set). It runs before
// the server's main, and never returns then: the helper sets the limits and
// becomes the program, or reaps it, and exits with syscall.Exit, so that
// nothing else of the process (a race detector's wait at exit) runs.
func init() {
	if len(os.Args) > 1 && os.Args[1] == helperArg && os.Getenv(helperMarkEnv) == helperArg {
		os.Unsetenv(helperMarkEnv)
		syscall.Exit(helperMain(os.Args[2:]))
	}
}

// helperMain runs the helper with args: its mode, the limits (Limits.spec),
// the program's path and its arguments. It returns the exit status when it
// fails before the program runs (127), or when it reaped it (0).
func helperMain(args []string) int {
	if len(args) < 3 {
		return helperFail("want a mode, limits and a program, got %q", args)
	}
	mode, spec, path, argv := args[0], args[1], args[2], args[3:]
	limits, err := parseLimits(spec)
	if err != nil {
		return helperFail("%v", err)
	}
	switch mode {
	case helperExec:
		if err := setLimits(limits); err != nil {
			return helperFail("%v", err)
		}
		err := syscall.Exec(path, append([]string{path}, argv...), os.Environ())
		return helperFail("run %s: %v", path, err)
	case helperReap:
		return reap(spec, path, argv)
	}
	return helperFail("unknown mode %q", mode)
}

// helperFail says on standard error, which the run's output holds, why the
// program did not run, and returns the status a shell gives a program it
// cannot run.
func helperFail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "mcpe-server bash helper: "+format+"\n", args...)
	return 127
}

// rlimits are the resources of each limit name.
var rlimits = map[string]int{
	limitCore:        unix.RLIMIT_CORE,
	limitData:        unix.RLIMIT_DATA,
	limitFsize:       unix.RLIMIT_FSIZE,
	limitNofile:      unix.RLIMIT_NOFILE,
	limitNprocUserns: unix.RLIMIT_NPROC,
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
		if _, known := rlimits[name]; !known {
			return nil, fmt.Errorf("limit %q is not one this helper knows", name)
		}
		out[name] = v
	}
	return out, nil
}

// setLimits sets each limit as both the soft and the hard one, so that the
// program cannot raise it, and lowers it to the hard limit in force, which
// only a privileged process may raise. It uses syscall.Setrlimit, which
// tells syscall.Exec not to restore the soft RLIMIT_NOFILE the Go runtime
// raised at start.
func setLimits(limits map[string]uint64) error {
	for name, v := range limits {
		if name == limitNprocUserns && !ownUserNamespace() {
			continue
		}
		res := rlimits[name]
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(res, &cur); err != nil {
			return fmt.Errorf("read the %s limit: %w", name, err)
		}
		v = min(v, cur.Max)
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("set the %s limit to %d: %w", name, v, err)
		}
	}
	return nil
}

// ownUserNamespace tells whether the process runs in a user namespace other
// than the initial one, whose map is the whole range of ids onto itself.
func ownUserNamespace() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return !(len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295")
}
