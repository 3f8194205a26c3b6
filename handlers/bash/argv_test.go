package bash

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// taggedEvent returns the JSON of an event of type typ with tags, as an
// event sender may post it.
func taggedEvent(t testing.TB, typ string, tags ...string) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(mcpe.Event{
		ID: testEventID, Type: typ, Data: json.RawMessage(`{"title":"b\na"}`),
		Metadata: mcpe.Metadata{Timestamp: time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC), Priority: mcpe.PriorityHigh, Tags: tags},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refusedOption matches the error of a run whose placeholder put an option
// in front of the program.
var refusedOption = regexp.MustCompile(`^argument 1 \("\$MCPE_EVENT_TAGS"\) expands to "-[^"]*", which starts with '-': event content never reaches a program as an option, so the run was refused; `)

// TestPlaceholderOptionAttack reproduces the attack of an event sender whose
// tags a handler passes as an argument: the program would read them as an
// option. Each run is refused, and the program never starts.
func TestPlaceholderOptionAttack(t *testing.T) {
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	commands := map[string]Command{"sort": {Path: "/usr/bin/sort"}, "echo": {Path: "/bin/echo"}}
	if git, err := exec.LookPath("git"); err == nil {
		commands["git"] = Command{Path: git, Env: map[string]string{"GIT_CONFIG_NOSYSTEM": "1"}}
	}
	r := newRunner(t, Options{Commands: commands})
	tests := []struct {
		name    string
		command string
		args    []string
		tags    []string
	}{
		// sort reads the event on standard input and would write it to
		// the file the tag names.
		{name: "sort --output", command: "sort", args: []string{"$MCPE_EVENT_TAGS"}, tags: []string{"--output=" + pwned}},
		// echo would read the tag as its option to interpret escapes.
		{name: "echo -e", command: "echo", args: []string{"$MCPE_EVENT_TAGS", `a\nb`}, tags: []string{"-e"}},
		// git would read the next argument as a config that makes "pwn" an
		// alias running a shell command.
		{name: "git -c", command: "git", args: []string{"$MCPE_EVENT_TAGS", "alias.pwn=!touch " + pwned, "pwn"}, tags: []string{"-c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := commands[tt.command]; !ok {
				t.Skipf("%s is not installed", tt.command)
			}
			spec := bashSpec(tt.command, "", tt.args...)
			if err := r.Check(context.Background(), "alice", spec); err != nil {
				t.Fatalf("Check() = %v; the arguments as written are fine", err)
			}
			out := r.Handle(context.Background(), eventInv(spec, taggedEvent(t, "github.issue.opened", tt.tags...)))
			if out.Err == nil || !refusedOption.MatchString(out.Err.Error()) {
				t.Errorf("Err = %v, want one matching %s", out.Err, refusedOption)
			}
			if out.Output != "" {
				t.Errorf("Output = %q; the program ran", out.Output)
			}
			if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists (%v): the tag reached the program as an option", pwned, err)
			}
		})
	}
}

// TestPlaceholderOptions checks which expansions count as an option: only a
// leading '-' that a placeholder put there, whatever the literal text around
// it, unless the command allows it.
func TestPlaceholderOptions(t *testing.T) {
	echo := helperCommand(t, "echo")
	allowing := helperCommand(t, "echo")
	allowing.AllowOptionPlaceholders = true
	r := newRunner(t, Options{Commands: map[string]Command{"echo": echo, "allowing": allowing}})
	dash := taggedEvent(t, "ci.build", "-x", "y")
	plain := taggedEvent(t, "ci.build", "x", "-y")
	tests := []struct {
		name     string
		command  string
		args     []string
		ev       json.RawMessage
		wantArgs []string // nil: refused
		wantErr  string
	}{
		{name: "tags", command: "echo", args: []string{"$MCPE_EVENT_TAGS"}, ev: dash,
			wantErr: `argument 1 ("$MCPE_EVENT_TAGS") expands to "-x,y", which starts with '-'`},
		{name: "braces", command: "echo", args: []string{"ok", "${MCPE_EVENT_TAGS}"}, ev: dash,
			wantErr: `argument 2 ("${MCPE_EVENT_TAGS}") expands to "-x,y", which starts with '-'`},
		{name: "after a literal --", command: "echo", args: []string{"--", "$MCPE_EVENT_TAGS"}, ev: dash,
			wantErr: `argument 2 ("$MCPE_EVENT_TAGS") expands to "-x,y", which starts with '-'`},
		{name: "an empty placeholder first", command: "echo", args: []string{"$MCPE_EVENT_COUNT$MCPE_EVENT_TAGS"}, ev: dash,
			wantErr: `argument 1 ("$MCPE_EVENT_COUNT$MCPE_EVENT_TAGS") expands to "-x,y", which starts with '-'`},
		{name: "a dash inside", command: "echo", args: []string{"$MCPE_EVENT_TAGS"}, ev: plain, wantArgs: []string{"x,-y"}},
		{name: "after a literal prefix", command: "echo", args: []string{"--tags=$MCPE_EVENT_TAGS", "t:$MCPE_EVENT_TAGS"}, ev: dash,
			wantArgs: []string{"--tags=-x,y", "t:-x,y"}},
		{name: "a literal option", command: "echo", args: []string{"-n", "$MCPE_EVENT_TYPE"}, ev: dash, wantArgs: []string{"-n", "ci.build"}},
		{name: "allowed by the operator", command: "allowing", args: []string{"$MCPE_EVENT_TAGS"}, ev: dash, wantArgs: []string{"-x,y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := eventInv(bashSpec(tt.command, "", tt.args...), tt.ev)
			if tt.wantArgs != nil {
				rep := runEcho(t, r, inv)
				if diff := cmp.Diff(tt.wantArgs, rep.Args); diff != "" {
					t.Errorf("arguments mismatch (-want +got):\n%s", diff)
				}
				return
			}
			out := r.Handle(context.Background(), inv)
			if out.Err == nil || !strings.HasPrefix(out.Err.Error(), tt.wantErr) {
				t.Errorf("Err = %v, want one starting with %q", out.Err, tt.wantErr)
			}
			if out.Output != "" {
				t.Errorf("Output = %q; the program ran", out.Output)
			}
		})
	}
}

// TestAllowOptions checks that a command with allowOptions false takes
// operands only: an argument the model wrote with a leading '-' is refused
// when the subscription is made, and at run time should the configuration
// have changed since.
func TestAllowOptions(t *testing.T) {
	no := false
	r := newRunner(t, Options{Commands: map[string]Command{"sort": {Path: "/usr/bin/sort", AllowOptions: &no}}})
	ctx := context.Background()
	if err := r.Check(ctx, "alice", bashSpec("sort", "", "file", "$MCPE_EVENT_ID", "a-b")); err != nil {
		t.Errorf("Check() of operands = %v, want nil", err)
	}
	err := r.Check(ctx, "alice", bashSpec("sort", "", "file", "--output=/etc/passwd"))
	want := &mcpe.InvalidError{Field: "handler.args[1]", Message: `"--output=/etc/passwd" starts with '-': the operator allows no options for command "sort"; give operands only`}
	var got *mcpe.InvalidError
	if !errors.As(err, &got) {
		t.Fatalf("Check() = %v, want an *mcpe.InvalidError", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Check() mismatch (-want +got):\n%s", diff)
	}
	out := r.Handle(ctx, eventInv(bashSpec("sort", "", "-o", "/dev/null"), event(t, map[string]any{})))
	if want := `argument 1 ("-o") starts with '-': the operator allows no options for command "sort"`; out.Err == nil || out.Err.Error() != want {
		t.Errorf("Err = %v, want %q", out.Err, want)
	}
}
