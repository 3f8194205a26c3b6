package bash

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

func TestCheck(t *testing.T) {
	r := newRunner(t, Options{
		Commands: map[string]Command{
			"notify": {Path: "/bin/sh"},
			"log":    {Path: "/bin/sh"},
		},
		MaxTimeout:     time.Minute,
		DefaultTimeout: 10 * time.Second,
	})
	none := newRunner(t, Options{})
	type invalid struct{ Field, Message string }
	tests := []struct {
		name string
		r    *Runner
		spec *mcpe.HandlerSpec
		want *invalid
	}{
		{name: "allowed", r: r, spec: bashSpec("notify", "")},
		{name: "allowed with everything", r: r, spec: &mcpe.HandlerSpec{
			Type: mcpe.HandlerBash, Command: "log", Input: "env", Timeout: 60000,
			Args: []string{"$MCPE_EVENT_ID", "${MCPE_EVENTS}", "$HOME", "$(id)"},
		}},
		{name: "nil", r: r, want: &invalid{"handler", "is required"}},
		{name: "wrong type", r: r, spec: &mcpe.HandlerSpec{Type: mcpe.HandlerWebhook, URL: "https://x"},
			want: &invalid{"handler.type", `"webhook" is not "bash"; this handler runs only bash handlers`}},
		{name: "unknown command", r: r, spec: bashSpec("rm", ""),
			want: &invalid{"handler.command", `"rm" is not a command the operator allowed; use one of "log", "notify" (a name, not a path or a shell line)`}},
		{name: "shell line", r: r, spec: bashSpec("notify; rm -rf /", ""),
			want: &invalid{"handler.command", `"notify; rm -rf /" is not a command the operator allowed; use one of "log", "notify" (a name, not a path or a shell line)`}},
		{name: "path", r: r, spec: bashSpec("/bin/sh", ""),
			want: &invalid{"handler.command", `"/bin/sh" is not a command the operator allowed; use one of "log", "notify" (a name, not a path or a shell line)`}},
		{name: "no command", r: r, spec: bashSpec("", ""),
			want: &invalid{"handler.command", `is required: the name of a command the operator allowed, one of "log", "notify"`}},
		{name: "none configured", r: none, spec: bashSpec("notify", ""),
			want: &invalid{"handler.command", `"notify" is not allowed: the operator allowed no commands on this server, so bash handlers cannot run here; use another handler type or leave handler out`}},
		{name: "bad input", r: r, spec: bashSpec("notify", "file"),
			want: &invalid{"handler.input", `"file" is not an input mode; use "stdin" (the event JSON on standard input, the default), "env" (MCPE_* variables) or "args" (the event JSON as the last argument)`}},
		{name: "timeout over max", r: r, spec: &mcpe.HandlerSpec{Type: mcpe.HandlerBash, Command: "notify", Timeout: 60001},
			want: &invalid{"handler.timeout", "is 60001 ms; the operator allows at most 60000 (1m0s); give a smaller number of milliseconds, or leave it out for the default 10s"}},
		{name: "negative timeout", r: r, spec: &mcpe.HandlerSpec{Type: mcpe.HandlerBash, Command: "notify", Timeout: -1},
			want: &invalid{"handler.timeout", "is -1 ms; the operator allows at most 60000 (1m0s); give a smaller number of milliseconds, or leave it out for the default 10s"}},
		{name: "unknown placeholder", r: r, spec: bashSpec("notify", "", "ok", "--id=${MCPE_EVENT_NAME}"),
			want: &invalid{"handler.args[1]", "uses $MCPE_EVENT_NAME, which is not a variable; the placeholders are $MCPE_SUBSCRIPTION_ID, $MCPE_DELIVERY, $MCPE_EVENT_ID, $MCPE_EVENT_TYPE, $MCPE_EVENT_PRIORITY, $MCPE_EVENT_TIMESTAMP, $MCPE_EVENT_TAGS, $MCPE_EVENT_DATA, $MCPE_EVENTS, $MCPE_EVENT_COUNT, $MCPE_REMAINING, written $NAME or ${NAME}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Check(context.Background(), "alice", tt.spec)
			var got *invalid
			if err != nil {
				var ie *mcpe.InvalidError
				if !errors.As(err, &ie) {
					t.Fatalf("Check() = %v (%T), want an *InvalidError", err, err)
				}
				got = &invalid{ie.Field, ie.Message}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh := Command{Path: "/bin/sh"}
	prog := filepath.Join(dir, "prog")
	sub := filepath.Join(dir, "sub")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    Options
		bwrap   string // what bwrap in PATH is, when set ("-" for none)
		wantErr string
	}{
		{name: "paths in a hidden directory", opts: Options{HiddenPaths: []string{dir}, Commands: map[string]Command{
			"notify": {Path: prog, WritablePaths: []string{sub}, ReadablePaths: []string{sub}}}}},
		{name: "writable path hidden", opts: Options{HiddenPaths: []string{sub}, Commands: map[string]Command{"notify": {Path: "/bin/sh", WritablePaths: []string{sub}}}},
			wantErr: `bash: commands.notify.writablePaths[0]: ` + sub + ` is private to the server (its database, configuration or data), which no handler program may see; use another path`},
		{name: "readable path hidden", opts: Options{HiddenPaths: []string{sub}, Commands: map[string]Command{"notify": {Path: "/bin/sh", ReadablePaths: []string{sub}}}},
			wantErr: `bash: commands.notify.readablePaths[0]: ` + sub + ` is private to the server`},
		{name: "program hidden", opts: Options{HiddenPaths: []string{prog}, Commands: map[string]Command{"notify": {Path: prog}}},
			wantErr: `bash: commands.notify.path: ` + prog + ` is private to the server`},
		{name: "missing readable path", opts: Options{Commands: map[string]Command{"notify": {Path: "/bin/sh", ReadablePaths: []string{filepath.Join(dir, "nope")}}}},
			wantErr: `bash: commands.notify.readablePaths[0]: stat ` + filepath.Join(dir, "nope") + `: no such file or directory; the path must exist`},
		{name: "defaults", opts: Options{Sandbox: SandboxOff}},
		{name: "commands", opts: Options{Sandbox: SandboxOff, Commands: map[string]Command{"a": sh, "b.c-d_e": {Path: "/bin/sh", WritablePaths: []string{dir}, Env: map[string]string{"TOKEN": "x"}}}}},
		{name: "relative path", opts: Options{Commands: map[string]Command{"notify": {Path: "notify-send"}}},
			wantErr: `bash: commands.notify.path: "notify-send" is not an absolute path; give the program's absolute path, such as /usr/bin/notify-send`},
		{name: "no path", opts: Options{Commands: map[string]Command{"notify": {}}},
			wantErr: `bash: commands.notify.path: is required`},
		{name: "missing program", opts: Options{Commands: map[string]Command{"notify": {Path: filepath.Join(dir, "nope")}}},
			wantErr: `bash: commands.notify.path: stat ` + filepath.Join(dir, "nope") + `: no such file or directory`},
		{name: "not executable", opts: Options{Commands: map[string]Command{"notify": {Path: notExec}}},
			wantErr: `bash: commands.notify.path: ` + notExec + ` is not executable (mode -rw-r--r--); chmod +x it`},
		{name: "directory", opts: Options{Commands: map[string]Command{"notify": {Path: dir}}},
			wantErr: `bash: commands.notify.path: ` + dir + ` is a directory, not a program`},
		{name: "bad name", opts: Options{Commands: map[string]Command{"no/slash": sh}},
			wantErr: `bash: commands.no/slash: a command name is 1 to 64 letters`},
		{name: "MCPE env", opts: Options{Commands: map[string]Command{"notify": {Path: "/bin/sh", Env: map[string]string{"MCPE_EVENT_ID": "x"}}}},
			wantErr: `bash: commands.notify.env: "MCPE_EVENT_ID" is not a variable name the operator may set`},
		{name: "bad env name", opts: Options{Commands: map[string]Command{"notify": {Path: "/bin/sh", Env: map[string]string{"A=B": "x"}}}},
			wantErr: `bash: commands.notify.env: "A=B" is not a variable name`},
		{name: "relative writable path", opts: Options{Commands: map[string]Command{"notify": {Path: "/bin/sh", WritablePaths: []string{"out"}}}},
			wantErr: `bash: commands.notify.writablePaths[0]: "out" is not an absolute path`},
		{name: "missing writable path", opts: Options{Commands: map[string]Command{"notify": {Path: "/bin/sh", WritablePaths: []string{filepath.Join(dir, "nope")}}}},
			wantErr: `bash: commands.notify.writablePaths[0]: stat ` + filepath.Join(dir, "nope") + `: no such file or directory; the path must exist`},
		{name: "bad sandbox", opts: Options{Sandbox: "docker"},
			wantErr: `bash: sandbox: "docker" is not a sandbox mode; use "auto" (bubblewrap when installed, the default), "bwrap" (bubblewrap required) or "off"`},
		{name: "bwrap required but missing", opts: Options{Sandbox: SandboxBwrap}, bwrap: "-",
			wantErr: `bash: sandbox is "bwrap" but bwrap is not in PATH; install bubblewrap (apt-get install bubblewrap), or set sandbox to "auto" or "off"`},
		{name: "bwrap required but broken", opts: Options{Sandbox: SandboxBwrap}, bwrap: "/bin/false",
			wantErr: `bash: sandbox is "bwrap" but `},
		{name: "auto with a broken bwrap", opts: Options{Sandbox: SandboxAuto}, bwrap: "/bin/false"},
		{name: "auto without bwrap", opts: Options{Sandbox: SandboxAuto}, bwrap: "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.WorkRoot = t.TempDir()
			if tt.bwrap != "" {
				fakeBwrap(t, tt.bwrap)
			}
			_, err := New(&tt.opts)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New() = %v, want no error", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("New() error = %v\nwant one starting with %s", err, tt.wantErr)
			}
		})
	}
}

// TestValidate checks that Validate names each setting by its key in the
// configuration file and does not look at the disk, which New does.
func TestValidate(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	tests := []struct {
		name string
		opts *Options
		want *mcpe.InvalidError
	}{
		{name: "nil", opts: nil},
		{name: "a program not on disk", opts: &Options{Commands: map[string]Command{"notify": {Path: missing, WritablePaths: []string{missing}}}}},
		{name: "sandbox", opts: &Options{Sandbox: "docker"},
			want: &mcpe.InvalidError{Field: "sandbox", Message: `"docker" is not a sandbox mode; use "auto" (bubblewrap when installed, the default), "bwrap" (bubblewrap required) or "off"`}},
		{name: "command path", opts: &Options{Commands: map[string]Command{"notify": {Path: "notify-send"}}},
			want: &mcpe.InvalidError{Field: "commands.notify.path", Message: `"notify-send" is not an absolute path; give the program's absolute path, such as /usr/bin/notify-send`}},
		{name: "env value", opts: &Options{Commands: map[string]Command{"notify": {Path: "/bin/sh", Env: map[string]string{"A": "x\x00"}}}},
			want: &mcpe.InvalidError{Field: "commands.notify.env.A", Message: "the value contains a NUL character, which no environment variable can hold"}},
		{name: "readable path", opts: &Options{Commands: map[string]Command{"notify": {Path: "/bin/sh", ReadablePaths: []string{"lib"}}}},
			want: &mcpe.InvalidError{Field: "commands.notify.readablePaths[0]", Message: `"lib" is not an absolute path; give one such as /home/mcpe/.local/lib`}},
		{name: "limits", opts: &Options{Commands: map[string]Command{"notify": {Path: "/bin/sh", Limits: Limits{MemoryBytes: -2}}}},
			want: &mcpe.InvalidError{Field: "commands.notify.memoryBytes", Message: "is -2; give a positive number of bytes, -1 for no limit, or leave it out for 1073741824"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			var got *mcpe.InvalidError
			if err != nil && !errors.As(err, &got) {
				t.Fatalf("Validate() = %v (%T), want an *mcpe.InvalidError", err, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewNil(t *testing.T) {
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		DefaultTimeout: DefaultTimeout, MaxTimeout: DefaultMaxTimeout, MaxConcurrent: DefaultMaxConcurrent,
		Sandbox: SandboxAuto, WorkRoot: os.TempDir(), Commands: map[string]Command{},
		Clock: clock.Real{},
	}
	got := r.opts
	got.Logger = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{}, r.Commands()); diff != "" {
		t.Errorf("Commands() mismatch (-want +got):\n%s", diff)
	}
}

func TestCommandsAndSandboxed(t *testing.T) {
	sh := Command{Path: "/bin/sh"}
	r := newRunner(t, Options{Commands: map[string]Command{"zeta": sh, "alpha": sh, "mid": sh}})
	if diff := cmp.Diff([]string{"alpha", "mid", "zeta"}, r.Commands()); diff != "" {
		t.Errorf("Commands() mismatch (-want +got):\n%s", diff)
	}
	if r.Sandboxed() {
		t.Error("Sandboxed() = true with sandbox off")
	}
	fakeBwrap(t, "/bin/false")
	auto := newRunner(t, Options{Sandbox: SandboxAuto})
	if auto.Sandboxed() {
		t.Error("Sandboxed() = true with a bwrap that does not work")
	}
}

func TestOptionsCopied(t *testing.T) {
	ao := false
	opts := Options{Commands: map[string]Command{"a": {Path: "/bin/sh", Env: map[string]string{"X": "1"}, AllowOptions: &ao, ReadablePaths: []string{"/usr"}}}}
	r := newRunner(t, opts)
	opts.Commands["a"].Env["X"] = "2"
	opts.Commands["a"].ReadablePaths[0] = "/etc"
	ao = true
	opts.Commands["b"] = Command{Path: "/bin/sh"}
	c := r.opts.Commands["a"]
	if c.Env["X"] != "1" || c.allowOptions() || c.ReadablePaths[0] != "/usr" || len(r.opts.Commands) != 1 {
		t.Errorf("the Runner sees changes made to its options after New: %+v", r.opts.Commands)
	}
}

// TestTimeoutWithinMax checks that a default timeout above the longest one
// allowed is lowered to it.
func TestTimeoutWithinMax(t *testing.T) {
	r := newRunner(t, Options{MaxTimeout: time.Second})
	if got := r.opts.DefaultTimeout; got != time.Second {
		t.Errorf("DefaultTimeout = %v, want MaxTimeout (1s)", got)
	}
}

// fakeBwrap makes PATH a directory whose bwrap is target, or that has no
// bwrap when target is "-".
func fakeBwrap(t *testing.T, target string) {
	t.Helper()
	dir := t.TempDir()
	if target != "-" {
		if err := os.Symlink(target, filepath.Join(dir, "bwrap")); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
}
