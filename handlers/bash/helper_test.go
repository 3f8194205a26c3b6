package bash

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// helperEnv selects what the test binary does when a test runs it as a
// command (through Command.Env, since a program gets nothing else from the
// test's environment).
const helperEnv = "BASH_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// report is what the "echo" helper prints: what it was given.
type report struct {
	Args    []string
	Env     map[string]string
	Stdin   string
	Cwd     string
	Entries []string
}

// helper runs the test binary as a program; it returns the exit status.
func helper(mode string, args []string) int {
	switch mode {
	case "echo":
		stdin, _ := io.ReadAll(os.Stdin)
		rep := report{Args: args, Env: map[string]string{}, Stdin: string(stdin)}
		if rep.Args == nil {
			rep.Args = []string{}
		}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			rep.Env[k] = v
		}
		rep.Cwd, _ = os.Getwd()
		entries, _ := os.ReadDir(".")
		for _, e := range entries {
			rep.Entries = append(rep.Entries, e.Name())
		}
		json.NewEncoder(os.Stdout).Encode(rep)
		return 0
	case "connect":
		c, err := net.DialTimeout("tcp", args[0], 5*time.Second)
		if err != nil {
			fmt.Println("failed:", err)
			return 1
		}
		c.Close()
		fmt.Println("connected")
		return 0
	case "detach", "detach-hang":
		// Start args[0] in a session of its own, which leaves the
		// process group, holding the output; then exit, or hang.
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Println("failed:", err)
			return 1
		}
		fmt.Println("started")
		if mode == "detach-hang" {
			time.Sleep(time.Hour)
		}
		return 0
	case "flood":
		n, _ := strconv.Atoi(args[0])
		os.Stdout.Write(bytes.Repeat([]byte("x"), n))
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

// helperCommand returns a command that runs the test binary as the helper
// in mode.
func helperCommand(t testing.TB, mode string) Command {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Under the race detector a program sleeps a second before exiting,
	// unless told otherwise: it inherits nothing from the test.
	return Command{Path: exe, Env: map[string]string{helperEnv: mode, "GORACE": "atexit_sleep_ms=0"}}
}

// newRunner returns a Runner for opts, with a WorkRoot of its own and no
// sandbox unless opts says otherwise.
func newRunner(t testing.TB, opts Options) *Runner {
	t.Helper()
	if opts.WorkRoot == "" {
		opts.WorkRoot = t.TempDir()
	}
	if opts.Sandbox == "" {
		opts.Sandbox = SandboxOff
	}
	r, err := New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// needBwrap skips the test when bubblewrap does not work here, unless CI
// is set: CI installs it, so its absence there is a failure.
func needBwrap(t testing.TB) {
	t.Helper()
	path, err := exec.LookPath("bwrap")
	if err == nil {
		err = probeBwrap(path, "")
	}
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("bubblewrap is required under CI=true: %v", err)
	}
	t.Skipf("bubblewrap is not usable here (apt-get install bubblewrap): %v", err)
}

// exeDir is the directory of the test binary, bound into the sandbox so
// that the helper runs there: the sandbox's /tmp hides it otherwise.
func exeDir(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(exe)
}

// testEventID is the id of the events built by event.
const testEventID = "0b6f2a4e-2f4c-4d59-9a0e-6a4b0f7f3c11"

// event returns the JSON of an event with data.
func event(t testing.TB, data any) json.RawMessage {
	t.Helper()
	d, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	ev := mcpe.Event{
		ID:   testEventID,
		Type: "github.issue.opened",
		Data: d,
		Metadata: mcpe.Metadata{
			Timestamp: time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC),
			Priority:  mcpe.PriorityHigh,
			Tags:      []string{"frontend", "urgent"},
		},
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// eventInv returns an event delivery of ev to spec.
func eventInv(spec *mcpe.HandlerSpec, ev json.RawMessage) *subscriptions.Invocation {
	return &subscriptions.Invocation{
		JobID: "job-1", SubscriptionID: "sub-1", Spec: spec, Attempt: 1,
		Kind: mcpe.InboxEvent, Event: ev,
	}
}

// batchInv returns a batch delivery of events to spec.
func batchInv(spec *mcpe.HandlerSpec, remaining int, events ...json.RawMessage) *subscriptions.Invocation {
	return &subscriptions.Invocation{
		JobID: "job-2", SubscriptionID: "sub-1", Spec: spec, Attempt: 1,
		Kind: mcpe.InboxBatch, Events: events, Remaining: remaining,
	}
}

// bashSpec returns a bash handler spec.
func bashSpec(command, input string, args ...string) *mcpe.HandlerSpec {
	return &mcpe.HandlerSpec{Type: mcpe.HandlerBash, Command: command, Input: input, Args: args}
}

// runEcho runs the echo helper for inv and returns its report.
func runEcho(t *testing.T, r *Runner, inv *subscriptions.Invocation) report {
	t.Helper()
	out := r.Handle(context.Background(), inv)
	if out.Err != nil {
		t.Fatalf("Handle: %v\noutput: %s", out.Err, out.Output)
	}
	var rep report
	if err := json.Unmarshal([]byte(out.Output), &rep); err != nil {
		t.Fatalf("the helper's output is not a report: %v\n%s", err, out.Output)
	}
	return rep
}

// liveProcesses returns the pids of the processes, not zombies, whose
// command line contains all of args in a row.
func liveProcesses(t testing.TB, args ...string) []int {
	t.Helper()
	want := []byte(strings.Join(args, "\x00") + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, want) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}

// killAllPids kills processes a failed test left behind.
func killAllPids(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
