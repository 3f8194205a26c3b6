package bash

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// eventVars are the variables of event(t, data) delivered to "sub-1",
// without the payload ones.
var eventVars = map[string]string{
	"MCPE_SUBSCRIPTION_ID": "sub-1",
	"MCPE_DELIVERY":        "event",
	"MCPE_EVENT_ID":        testEventID,
	"MCPE_EVENT_TYPE":      "github.issue.opened",
	"MCPE_EVENT_PRIORITY":  "high",
	"MCPE_EVENT_TIMESTAMP": "2025-01-15T10:30:00Z",
	"MCPE_EVENT_TAGS":      "frontend,urgent",
	"MCPE_EVENT_COUNT":     "",
	"MCPE_REMAINING":       "",
}

// baseEnv returns the environment a helper run in cwd gets besides the
// variables.
func baseEnv(cwd string, mode string) map[string]string {
	return map[string]string{helperEnv: mode, "GORACE": "atexit_sleep_ms=0", "PATH": DefaultPath, "HOME": cwd, "PWD": cwd}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestInputModes(t *testing.T) {
	r := newRunner(t, Options{Commands: map[string]Command{"echo": helperCommand(t, "echo")}})
	ev := event(t, map[string]any{"number": 42})
	data := `{"number":42}`
	other := json.RawMessage(`{"id":"e2","type":"x.y","data":{},"metadata":{"timestamp":"2025-01-15T10:31:00Z","priority":"low"}}`)
	batch := batchInv(bashSpec("echo", ""), 3, ev, other)
	batchPayload := string(batch.Payload())
	events := "[" + string(ev) + "," + string(other) + "]"
	batchVars := map[string]string{
		"MCPE_SUBSCRIPTION_ID": "sub-1", "MCPE_DELIVERY": "batch",
		"MCPE_EVENT_ID": "", "MCPE_EVENT_TYPE": "", "MCPE_EVENT_PRIORITY": "", "MCPE_EVENT_TIMESTAMP": "", "MCPE_EVENT_TAGS": "",
		"MCPE_EVENT_COUNT": "2", "MCPE_REMAINING": "3",
	}
	tests := []struct {
		name      string
		inv       *subscriptions.Invocation
		wantArgs  []string
		wantStdin string
		wantVars  map[string]string
	}{
		{
			name:      "event, default input",
			inv:       eventInv(bashSpec("echo", "", "--type", "$MCPE_EVENT_TYPE"), ev),
			wantArgs:  []string{"--type", "github.issue.opened"},
			wantStdin: string(ev),
			wantVars:  eventVars,
		},
		{
			name:      "event, stdin",
			inv:       eventInv(bashSpec("echo", "stdin"), ev),
			wantArgs:  []string{},
			wantStdin: string(ev),
			wantVars:  eventVars,
		},
		{
			name:     "event, env",
			inv:      eventInv(bashSpec("echo", "env", "${MCPE_EVENT_ID}.json"), ev),
			wantArgs: []string{testEventID + ".json"},
			wantVars: merge(eventVars, map[string]string{"MCPE_EVENT_DATA": data, "MCPE_EVENTS": ""}),
		},
		{
			name:     "event, args",
			inv:      eventInv(bashSpec("echo", "args", "first", "$MCPE_EVENT_DATA"), ev),
			wantArgs: []string{"first", data, string(ev)},
			wantVars: eventVars,
		},
		{
			name:      "batch, stdin",
			inv:       batchInv(bashSpec("echo", "", "$MCPE_EVENT_COUNT", "$MCPE_EVENT_ID"), 3, ev, other),
			wantArgs:  []string{"2", ""},
			wantStdin: batchPayload,
			wantVars:  batchVars,
		},
		{
			name:     "batch, env",
			inv:      batchInv(bashSpec("echo", "env"), 3, ev, other),
			wantArgs: []string{},
			wantVars: merge(batchVars, map[string]string{"MCPE_EVENTS": events, "MCPE_EVENT_DATA": ""}),
		},
		{
			name:     "batch, args",
			inv:      batchInv(bashSpec("echo", "args", "${MCPE_EVENTS}"), 3, ev, other),
			wantArgs: []string{events, batchPayload},
			wantVars: batchVars,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := runEcho(t, r, tt.inv)
			want := report{
				Args:  tt.wantArgs,
				Env:   merge(baseEnv(rep.Cwd, "echo"), tt.wantVars),
				Stdin: tt.wantStdin,
				Cwd:   rep.Cwd,
			}
			if diff := cmp.Diff(want, rep); diff != "" {
				t.Errorf("the program got (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCleanEnvironment(t *testing.T) {
	t.Setenv("BASH_TEST_LEAK", "leaked")
	t.Setenv("HOME", "/leaked")
	t.Setenv("LD_PRELOAD", "/leaked.so")
	ev := event(t, map[string]any{})
	tests := []struct {
		name    string
		sandbox bool
		env     map[string]string
		want    func(cwd string) map[string]string
	}{
		{
			name: "plain",
			want: func(cwd string) map[string]string { return merge(baseEnv(cwd, "echo"), eventVars) },
		},
		{
			name: "operator variables",
			env:  map[string]string{"PATH": "/opt/tools/bin", "TOKEN": "s3cret"},
			want: func(cwd string) map[string]string {
				return merge(baseEnv(cwd, "echo"), eventVars, map[string]string{"PATH": "/opt/tools/bin", "TOKEN": "s3cret"})
			},
		},
		{
			name:    "sandboxed",
			sandbox: true,
			env:     map[string]string{"TOKEN": "s3cret"},
			want: func(cwd string) map[string]string {
				return merge(baseEnv(cwd, "echo"), eventVars, map[string]string{"TOKEN": "s3cret"})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := helperCommand(t, "echo")
			c.Env = merge(c.Env, tt.env)
			opts := Options{Commands: map[string]Command{"echo": c}}
			if tt.sandbox {
				needBwrap(t)
				opts.Sandbox = SandboxBwrap
				c.WritablePaths = []string{exeDir(t)}
				opts.Commands["echo"] = c
			}
			r := newRunner(t, opts)
			rep := runEcho(t, r, eventInv(bashSpec("echo", ""), ev))
			if diff := cmp.Diff(tt.want(rep.Cwd), rep.Env); diff != "" {
				t.Errorf("environment mismatch (-want +got):\n%s", diff)
			}
			if rep.Stdin != string(ev) {
				t.Errorf("stdin = %q, want the event", rep.Stdin)
			}
		})
	}
}

// TestShellMetacharacters checks that shell syntax in the event and in the
// arguments reaches the program as plain text, in every input mode.
func TestShellMetacharacters(t *testing.T) {
	pwned := filepath.Join(t.TempDir(), "pwned")
	// victim holds a file that a shell reading "; rm -rf <victim>" would
	// delete.
	victim := t.TempDir()
	if err := os.WriteFile(filepath.Join(victim, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	nasty := []string{
		"; rm -rf " + victim,
		"x; rm -rf " + victim + " #",
		"; touch " + pwned,
		"`touch " + pwned + "`",
		"$(touch " + pwned + ")",
		"| touch " + pwned,
		"&& touch " + pwned,
		"x\ntouch " + pwned + "\n",
		`' " \ * ? ~ $HOME ${PATH} > ` + pwned,
	}
	ev := event(t, map[string]any{"title": nasty})
	data, err := json.Marshal(map[string]any{"title": nasty})
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, Options{Commands: map[string]Command{
		"echo":     helperCommand(t, "echo"),
		"bin-echo": {Path: "/bin/echo"},
	}})
	for _, input := range []string{"stdin", "env", "args"} {
		t.Run(input, func(t *testing.T) {
			args := append(append([]string{}, nasty...), "$MCPE_EVENT_DATA")
			rep := runEcho(t, r, eventInv(bashSpec("echo", input, args...), ev))
			wantArgs := append(append([]string{}, nasty...), string(data))
			if input == "args" {
				wantArgs = append(wantArgs, string(ev))
			}
			if diff := cmp.Diff(wantArgs, rep.Args); diff != "" {
				t.Errorf("arguments mismatch (-want +got):\n%s", diff)
			}
			switch input {
			case "stdin":
				if rep.Stdin != string(ev) {
					t.Errorf("stdin = %q, want the event %q", rep.Stdin, ev)
				}
			case "env":
				if got := rep.Env["MCPE_EVENT_DATA"]; got != string(data) {
					t.Errorf("MCPE_EVENT_DATA = %q, want %q", got, data)
				}
			}
		})
	}
	t.Run("real program", func(t *testing.T) {
		out := r.Handle(context.Background(), eventInv(bashSpec("bin-echo", "args", nasty...), ev))
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		want := strings.Join(append(append([]string{}, nasty...), string(ev)), " ") + "\n"
		if diff := cmp.Diff(want, out.Output); diff != "" {
			t.Errorf("output mismatch (-want +got):\n%s", diff)
		}
	})
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (or cannot be checked: %v): something ran a shell", pwned, err)
	}
	if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
		t.Errorf("the file \"; rm -rf\" named is gone (%v): something ran a shell", err)
	}
}

func TestWorkDir(t *testing.T) {
	root := t.TempDir()
	r := newRunner(t, Options{WorkRoot: root, Commands: map[string]Command{
		"echo": helperCommand(t, "echo"),
		"sh":   {Path: "/bin/sh"},
	}})
	ev := event(t, map[string]any{})
	var dirs []string
	for range 2 {
		rep := runEcho(t, r, eventInv(bashSpec("echo", ""), ev))
		if filepath.Dir(rep.Cwd) != root {
			t.Errorf("the working directory %s is not in the work root %s", rep.Cwd, root)
		}
		if len(rep.Entries) != 0 {
			t.Errorf("the working directory holds %q, want it empty", rep.Entries)
		}
		dirs = append(dirs, rep.Cwd)
	}
	if dirs[0] == dirs[1] {
		t.Errorf("two runs shared the working directory %s", dirs[0])
	}
	// A program may leave files it made hard to remove.
	out := r.Handle(context.Background(), eventInv(bashSpec("sh", "", "-c", "mkdir -p a/b && touch a/b/f && chmod 0500 a/b && chmod 0 a && ln -s / root"), ev))
	if out.Err != nil {
		t.Fatalf("Handle: %v: %s", out.Err, out.Output)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the working directory %s was not removed: %v", d, err)
		}
	}
	left, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the work root holds %v after the runs, want nothing", left)
	}
	if _, err := os.Stat("/"); err != nil {
		t.Fatalf("removing the working directory followed a link: %v", err)
	}
}

func TestExitStatus(t *testing.T) {
	r := newRunner(t, Options{Commands: map[string]Command{"sh": {Path: "/bin/sh"}}})
	ev := event(t, map[string]any{})
	tests := []struct {
		name       string
		script     string
		wantOutput string
		wantErr    string // a regular expression; "" for success
	}{
		{name: "success", script: "echo done", wantOutput: "done\n"},
		{name: "status and output", script: "echo working; echo boom >&2; exit 3", wantOutput: "working\nboom\n", wantErr: `^exit status 3: working\nboom$`},
		{name: "no output", script: "exit 1", wantErr: `^exit status 1 \(no output\)$`},
		{name: "signal", script: "kill -SEGV $$", wantErr: `^signal: segmentation fault \(no output\)$`},
		{
			name:       "long output",
			script:     `i=0; while [ $i -lt 100 ]; do echo line$i; i=$((i+1)); done; exit 2`,
			wantOutput: lines(100),
			wantErr:    `^exit status 2: \.\.\.(line[0-9]+\n)+line99$`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := r.Handle(context.Background(), eventInv(bashSpec("sh", "", "-c", tt.script), ev))
			if out.Output != tt.wantOutput {
				t.Errorf("Output = %q, want %q", out.Output, tt.wantOutput)
			}
			if out.RetryIn != 0 || out.Disable {
				t.Errorf("RetryIn = %v, Disable = %v; a command is never retried nor disabled", out.RetryIn, out.Disable)
			}
			if tt.wantErr == "" {
				if out.Err != nil {
					t.Errorf("Err = %v, want success", out.Err)
				}
				return
			}
			if out.Err == nil || !regexp.MustCompile(tt.wantErr).MatchString(out.Err.Error()) {
				t.Errorf("Err = %v, want one matching %s", out.Err, tt.wantErr)
			}
			if out.Err != nil && len(out.Err.Error()) > tailLen+100 {
				t.Errorf("Err is %d bytes long; the tail should be at most %d", len(out.Err.Error()), tailLen)
			}
		})
	}
}

func lines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line%d\n", i)
	}
	return b.String()
}

// TestTimeoutKillsGroup runs a program that starts a grandchild and hangs:
// at the timeout both are killed, and Handle returns at once.
func TestTimeoutKillsGroup(t *testing.T) {
	for _, sandbox := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "bwrap"}[sandbox], func(t *testing.T) {
			opts := Options{Commands: map[string]Command{"sh": {Path: "/bin/sh"}}}
			if sandbox {
				needBwrap(t)
				opts.Sandbox = SandboxBwrap
			}
			r := newRunner(t, opts)
			// A duration no other process uses, to find them by.
			token := fmt.Sprintf("%d.%06d", 100+rand.IntN(800), rand.IntN(1000000))
			spec := bashSpec("sh", "", "-c", "sleep "+token+" & echo started $!; sleep "+token)
			// Long enough for the program to start and print, under the
			// race detector too, whose helper starts slower.
			spec.Timeout = 1000
			start := time.Now()
			out := r.Handle(context.Background(), eventInv(spec, event(t, map[string]any{})))
			elapsed := time.Since(start)
			if want := `^killed after 1s, the run's timeout: started [0-9]+$`; out.Err == nil || !regexp.MustCompile(want).MatchString(out.Err.Error()) {
				t.Errorf("Err = %v, want one matching %s (output %q)", out.Err, want, out.Output)
			}
			if elapsed > 5*time.Second {
				t.Errorf("Handle returned after %v; the timeout was 1s", elapsed)
			}
			// SIGKILL was sent; the processes may take a moment to go.
			deadline := time.Now().Add(2 * time.Second)
			for {
				pids := liveProcesses(t, "sleep", token)
				if len(pids) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("processes %v (sleep %s) outlived the run", pids, token)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestLeftoversKilled runs a program that exits at once, leaving a process
// in the background holding its output: the process is killed with the
// run, which ends at once.
func TestLeftoversKilled(t *testing.T) {
	for _, sandbox := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "bwrap"}[sandbox], func(t *testing.T) {
			opts := Options{Commands: map[string]Command{"sh": {Path: "/bin/sh"}}}
			if sandbox {
				needBwrap(t)
				opts.Sandbox = SandboxBwrap
			}
			r := newRunner(t, opts)
			token := fmt.Sprintf("%d.%06d", 100+rand.IntN(800), rand.IntN(1000000))
			start := time.Now()
			out := r.Handle(context.Background(), eventInv(bashSpec("sh", "", "-c", "sleep "+token+" & echo started"), event(t, map[string]any{})))
			if out.Err != nil || out.Output != "started\n" {
				t.Errorf("Handle = %q, %v; want success", out.Output, out.Err)
			}
			if elapsed := time.Since(start); elapsed >= drainDelay {
				t.Errorf("Handle returned after %v: it waited for the output of a process that should be dead", elapsed)
			}
			if pids := liveProcesses(t, "sleep", token); len(pids) != 0 {
				t.Errorf("processes %v (sleep %s) outlived the run", pids, token)
			}
		})
	}
}

func TestCancelKills(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, Options{Commands: map[string]Command{"sh": {Path: "/bin/sh"}}})
	token := fmt.Sprintf("%d.%06d", 100+rand.IntN(800), rand.IntN(1000000))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan subscriptions.Outcome)
	go func() {
		done <- r.Handle(ctx, eventInv(bashSpec("sh", "", "-c", `echo up > "$1"; exec sleep `+token, "sh", started), event(t, map[string]any{})))
	}()
	readFIFO(t, started)
	cancel()
	out := <-done
	if want := "killed: the run was stopped (context canceled) (no output)"; out.Err == nil || out.Err.Error() != want {
		t.Errorf("Err = %v, want %q", out.Err, want)
	}
	if pids := liveProcesses(t, "sleep", token); len(pids) != 0 {
		t.Errorf("processes %v outlived the cancelled run", pids)
	}
}

// TestDefaultOutputCap checks that a run keeps 64 KiB of output.
func TestDefaultOutputCap(t *testing.T) {
	r := newRunner(t, Options{Commands: map[string]Command{"flood": helperCommand(t, "flood")}})
	out := r.Handle(context.Background(), eventInv(bashSpec("flood", "", "200000"), event(t, map[string]any{})))
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	want := strings.Repeat("x", 64<<10) + "\n[truncated: 65536 of 200000 bytes kept]"
	if out.Output != want {
		t.Errorf("Output is %d bytes ending %q; want 64 KiB of output and the truncation note", len(out.Output), out.Output[max(len(out.Output)-60, 0):])
	}
}

func TestOutputCap(t *testing.T) {
	r := newRunner(t, Options{Commands: map[string]Command{"flood": helperCommand(t, "flood")}})
	r.maxOutput = 1000
	ev := event(t, map[string]any{})
	tests := []struct {
		n    string
		want string
	}{
		{"10", strings.Repeat("x", 10)},
		{"1000", strings.Repeat("x", 1000)},
		{"1001", strings.Repeat("x", 1000) + "\n[truncated: 1000 of 1001 bytes kept]"},
		// Far more than a pipe holds: the program is not blocked.
		{"1048576", strings.Repeat("x", 1000) + "\n[truncated: 1000 of 1048576 bytes kept]"},
	}
	for _, tt := range tests {
		t.Run(tt.n, func(t *testing.T) {
			out := r.Handle(context.Background(), eventInv(bashSpec("flood", "", tt.n), ev))
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			if diff := cmp.Diff(tt.want, out.Output); diff != "" {
				t.Errorf("Output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLargePayload(t *testing.T) {
	root := t.TempDir()
	r := newRunner(t, Options{WorkRoot: root, Commands: map[string]Command{"echo": helperCommand(t, "echo")}})
	r.maxOutput = 1 << 20
	ev := event(t, map[string]any{"blob": strings.Repeat("a", 200<<10)})
	tests := []struct {
		input string
		args  []string
		want  string
	}{
		{input: "stdin"},
		{input: "env", want: `^the variable MCPE_EVENT_DATA is 2048[0-9]{2} bytes long; Linux passes at most 131055 bytes in one environment variable; use input "stdin" to pass large events$`},
		{input: "args", want: `^argument 1 is 20[0-9]{4} bytes long; Linux passes at most 131071 bytes in one argument; use input "stdin" to pass large events$`},
		{input: "stdin", args: []string{"$MCPE_EVENT_DATA"}, want: `^argument 1 is 2048[0-9]{2} bytes long`},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			out := r.Handle(context.Background(), eventInv(bashSpec("echo", tt.input, tt.args...), ev))
			if tt.want == "" {
				if out.Err != nil {
					t.Fatal(out.Err)
				}
				var rep report
				if err := json.Unmarshal([]byte(out.Output), &rep); err != nil || rep.Stdin != string(ev) {
					t.Errorf("the program did not get the event on stdin: %v", err)
				}
				return
			}
			if out.Err == nil || !regexp.MustCompile(tt.want).MatchString(out.Err.Error()) {
				t.Errorf("Err = %v, want one matching %s", out.Err, tt.want)
			}
		})
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Errorf("the work root holds %v after the runs, want nothing", left)
	}
}

func TestBadInvocation(t *testing.T) {
	r := newRunner(t, Options{Commands: map[string]Command{"sh": {Path: "/bin/sh"}}})
	pwned := filepath.Join(t.TempDir(), "ran")
	spec := bashSpec("sh", "", "-c", "touch "+pwned)
	tests := []struct {
		name string
		inv  *subscriptions.Invocation
		want string
	}{
		{"truncated event", eventInv(spec, json.RawMessage(`{"id":"x","metadata":{"tags":[`)), "the event is not valid JSON: "},
		{"not an object", eventInv(spec, json.RawMessage(`"x"`)), "the event is not a JSON object"},
		{"no event", eventInv(spec, nil), "the delivery has no event"},
		{"bad event in batch", batchInv(spec, 0, json.RawMessage(`{"a":`)), "the batch holds an event that is not valid JSON"},
		{"no spec", eventInv(nil, event(t, map[string]any{})), "the invocation has no bash handler"},
		{"webhook spec", eventInv(&mcpe.HandlerSpec{Type: mcpe.HandlerWebhook}, event(t, map[string]any{})), "the invocation has no bash handler"},
		{"command no longer allowed", eventInv(bashSpec("gone", ""), event(t, map[string]any{})), `command "gone" is not allowed by the operator (any more); the allowed commands are "sh"`},
		{"bad input", eventInv(bashSpec("sh", "file"), event(t, map[string]any{})), `input "file" is not an input mode`},
	}
	tests = append(tests, struct {
		name string
		inv  *subscriptions.Invocation
		want string
	}{"nil", nil, "no invocation"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := r.Handle(context.Background(), tt.inv)
			if out.Err == nil || !strings.HasPrefix(out.Err.Error(), tt.want) {
				t.Errorf("Err = %v, want one starting with %q", out.Err, tt.want)
			}
		})
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the program ran for a bad invocation")
	}
}

// TestConcurrencyCap checks that with MaxConcurrent 1 a second run waits
// until the first is over, using FIFOs to know where each run is.
func TestConcurrencyCap(t *testing.T) {
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	for _, f := range []string{started, release} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := newRunner(t, Options{MaxConcurrent: 1, Commands: map[string]Command{"sh": {Path: "/bin/sh"}}})
	waiting := make(chan struct{}, 4)
	r.waitHook = func() { waiting <- struct{}{} }
	// Each run takes a lock that fails if another run holds it, says it
	// started, and holds the lock until released.
	script := `mkdir "$1/lock" || { echo overlap; exit 1; }
echo started > "$1/started"
read x < "$1/release"
rmdir "$1/lock"`
	inv := eventInv(bashSpec("sh", "", "-c", script, "sh", dir), event(t, map[string]any{}))
	results := make(chan subscriptions.Outcome, 2)
	go func() { results <- r.Handle(context.Background(), inv) }()
	readFIFO(t, started) // the first run holds the slot

	go func() { results <- r.Handle(context.Background(), inv) }()
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the second run did not wait for a slot")
	}

	// A run waiting for a slot gives up when its context is done.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out := r.Handle(ctx, inv); out.Err == nil || out.Err.Error() != "not run: context canceled" {
		t.Errorf("a cancelled run waiting for a slot: Err = %v, want \"not run: context canceled\"", out.Err)
	}

	writeFIFO(t, release) // the first run ends
	readFIFO(t, started)  // the second starts
	writeFIFO(t, release)
	for range 2 {
		if out := <-results; out.Err != nil {
			t.Errorf("a run failed: %v: %s", out.Err, out.Output)
		}
	}
}

// readFIFO reads the FIFO path to its end, failing the test if no writer
// comes within 10 seconds.
func readFIFO(t *testing.T, path string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := os.ReadFile(path)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing wrote to %s", path)
	}
}

// writeFIFO writes a line to the FIFO path, failing the test if no reader
// comes within 10 seconds.
func writeFIFO(t *testing.T, path string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- os.WriteFile(path, []byte("go\n"), 0o600) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing read %s", path)
	}
}

// stepClock is a clock that moves by step each time it is read.
type stepClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

func (c *stepClock) AfterFunc(time.Duration, func()) clock.Timer { panic("not used") }

// TestRunDurationOnTheClock checks that a run is timed on Options.Clock.
func TestRunDurationOnTheClock(t *testing.T) {
	var logs bytes.Buffer
	r := newRunner(t, Options{
		Commands: map[string]Command{"sh": {Path: "/bin/sh"}},
		Logger:   slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Clock:    &stepClock{step: 90 * time.Second},
	})
	out := r.Handle(context.Background(), eventInv(bashSpec("sh", "", "-c", "exit 0"), event(t, map[string]any{})))
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if !strings.Contains(logs.String(), "duration=1m30s") {
		t.Errorf("the run's log does not say duration=1m30s:\n%s", logs.String())
	}
}
