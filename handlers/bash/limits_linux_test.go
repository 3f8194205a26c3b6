package bash

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"golang.org/x/sys/unix"
)

// limitNames are the lines of /proc/self/limits the limits set.
var limitNames = map[string]string{
	"Max processes":      limitNprocUserns,
	"Max data size":      limitData,
	"Max file size":      limitFsize,
	"Max open files":     limitNofile,
	"Max core file size": limitCore,
}

// readLimits parses /proc/<pid>/limits as a program printed it: the soft
// and hard value of each limit in limitNames, "unlimited" as is.
func readLimits(t *testing.T, text string) map[string][2]string {
	t.Helper()
	got := make(map[string][2]string)
	for line := range strings.Lines(text) {
		for prefix, name := range limitNames {
			if rest, ok := strings.CutPrefix(line, prefix+" "); ok {
				f := strings.Fields(rest)
				if len(f) < 2 {
					t.Fatalf("limit line %q", line)
				}
				got[name] = [2]string{f[0], f[1]}
			}
		}
	}
	if len(got) != len(limitNames) {
		t.Fatalf("the program printed no limits, or not all:\n%s", text)
	}
	return got
}

// ownLimit returns the test's own limit res, as a child of it gets it.
func ownLimit(t *testing.T, res int) [2]string {
	t.Helper()
	var l syscall.Rlimit
	if err := syscall.Getrlimit(res, &l); err != nil {
		t.Fatal(err)
	}
	s := func(v uint64) string {
		if v == unix.RLIM_INFINITY {
			return "unlimited"
		}
		return strconv.FormatUint(v, 10)
	}
	return [2]string{s(l.Cur), s(l.Max)}
}

func both(v string) [2]string { return [2]string{v, v} }

// TestLimitsInForce reads /proc/self/limits from an allowed program: the
// limits are set on the program's own process, with the sandbox and
// without it.
func TestLimitsInForce(t *testing.T) {
	custom := Limits{MemoryBytes: 512 << 20}
	none := Limits{MemoryBytes: NoLimit}
	ownNproc := ownLimit(t, unix.RLIMIT_NPROC)
	ownData := ownLimit(t, unix.RLIMIT_DATA)
	tests := []struct {
		name    string
		sandbox string
		limits  Limits
		want    map[string][2]string
	}{
		{name: "defaults, no sandbox", sandbox: SandboxOff, want: map[string][2]string{
			// Without a user namespace of its own, the count would
			// include the server's threads: no default.
			limitNprocUserns: ownNproc, limitData: both("1073741824"), limitFsize: both("67108864"), limitNofile: both("256"), limitCore: both("0"),
		}},
		{name: "defaults, bwrap", sandbox: SandboxBwrap, want: map[string][2]string{
			limitNprocUserns: both("128"), limitData: both("1073741824"), limitFsize: both("67108864"), limitNofile: both("256"), limitCore: both("0"),
		}},
		{name: "set, no sandbox", sandbox: SandboxOff, limits: custom, want: map[string][2]string{
			limitNprocUserns: ownNproc, limitData: both("536870912"), limitFsize: both("67108864"), limitNofile: both("256"), limitCore: both("0"),
		}},
		{name: "set, bwrap", sandbox: SandboxBwrap, limits: custom, want: map[string][2]string{
			limitNprocUserns: both("128"), limitData: both("536870912"), limitFsize: both("67108864"), limitNofile: both("256"), limitCore: both("0"),
		}},
		{name: "none, bwrap", sandbox: SandboxBwrap, limits: none, want: map[string][2]string{
			limitNprocUserns: both("128"), limitData: ownData, limitFsize: both("67108864"), limitNofile: both("256"), limitCore: both("0"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.sandbox == SandboxBwrap {
				needBwrap(t)
			}
			r := newRunner(t, Options{Sandbox: tt.sandbox, Commands: map[string]Command{"cat": {Path: "/bin/cat", Limits: tt.limits}}})
			out := r.Handle(context.Background(), eventInv(bashSpec("cat", "", "/proc/self/limits"), event(t, map[string]any{})))
			if out.Err != nil {
				t.Fatalf("Handle: %v", out.Err)
			}
			got := readLimits(t, out.Output)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("limits mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFileSizeLimit checks that a program writing a file past maxFileBytes
// is killed, and the file stops at the limit.
func TestFileSizeLimit(t *testing.T) {
	defer func(n int64) { maxFileBytes = n }(maxFileBytes)
	maxFileBytes = 4096
	for _, sandbox := range []string{SandboxOff, SandboxBwrap} {
		t.Run(sandbox, func(t *testing.T) {
			if sandbox == SandboxBwrap {
				needBwrap(t)
			}
			dir := t.TempDir()
			r := newRunner(t, Options{Sandbox: sandbox, Commands: map[string]Command{
				"sh": {Path: "/bin/sh", WritablePaths: []string{dir}},
			}})
			out := r.Handle(context.Background(), eventInv(bashSpec("sh", "", "-c", `exec head -c 100000 /dev/zero > "$1/big"`, "sh", dir), event(t, map[string]any{})))
			// bubblewrap reports a signal as 128 + its number.
			if want := `^(signal: file size limit exceeded|exit status 153) \(no output\)$`; out.Err == nil || !regexp.MustCompile(want).MatchString(out.Err.Error()) {
				t.Errorf("Err = %v, want one matching %s", out.Err, want)
			}
			fi, err := os.Stat(filepath.Join(dir, "big"))
			if err != nil || fi.Size() != 4096 {
				t.Errorf("the file is %v (%v), want 4096 bytes", fi, err)
			}
		})
	}
}

func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		limits Limits
		want   *mcpe.InvalidError
	}{
		{limits: Limits{}},
		{limits: Limits{MemoryBytes: NoLimit}},
		{limits: Limits{MemoryBytes: 1}},
		{limits: Limits{MemoryBytes: -5}, want: &mcpe.InvalidError{Field: "commands.x.memoryBytes", Message: "is -5; give a positive number of bytes, -1 for no limit, or leave it out for 1073741824"}},
	}
	for _, tt := range tests {
		opts := &Options{Commands: map[string]Command{"x": {Path: "/bin/true", Limits: tt.limits}}}
		var got *mcpe.InvalidError
		if err := opts.Validate(); err != nil && !errors.As(err, &got) {
			t.Fatalf("Validate() = %v, want an *mcpe.InvalidError", err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Validate(%+v) mismatch (-want +got):\n%s", tt.limits, diff)
		}
	}
}

func TestLimitsSpec(t *testing.T) {
	tests := []struct {
		limits Limits
		want   string
	}{
		{Limits{}, "core=0,data=1073741824,fsize=67108864,nofile=256,nproc-userns=128"},
		{Limits{MemoryBytes: 8}, "core=0,data=8,fsize=67108864,nofile=256,nproc-userns=128"},
		{Limits{MemoryBytes: NoLimit}, "core=0,fsize=67108864,nofile=256,nproc-userns=128"},
	}
	for _, tt := range tests {
		got := tt.limits.spec()
		if got != tt.want {
			t.Errorf("%+v.spec() = %q, want %q", tt.limits, got, tt.want)
		}
		if _, err := parseLimits(got); err != nil {
			t.Errorf("parseLimits(%q) = %v", got, err)
		}
	}
	for _, bad := range []string{"", "core", "core=x", "stack=1", "core=-1"} {
		if _, err := parseLimits(bad); err == nil {
			t.Errorf("parseLimits(%q) = nil error, want one", bad)
		}
	}
}
