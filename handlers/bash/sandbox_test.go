package bash

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSandboxNetwork(t *testing.T) {
	needBwrap(t)
	tests := []struct {
		name       string
		network    bool
		wantOutput string // prefix
		wantConn   bool
	}{
		{name: "no network", wantOutput: "failed: dial tcp 127.0.0.1:"},
		{name: "network", network: true, wantOutput: "connected\n", wantConn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan string, 8)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					accepted <- c.RemoteAddr().String()
					c.Close()
				}
			}()

			c := helperCommand(t, "connect")
			c.Network = tt.network
			c.WritablePaths = []string{exeDir(t)}
			r := newRunner(t, Options{Sandbox: SandboxBwrap, Commands: map[string]Command{"connect": c}})
			out := r.Handle(context.Background(), eventInv(bashSpec("connect", "", ln.Addr().String()), event(t, map[string]any{})))
			if !strings.HasPrefix(out.Output, tt.wantOutput) {
				t.Errorf("Output = %q, want it to start with %q", out.Output, tt.wantOutput)
			}
			if (out.Err == nil) != tt.wantConn {
				t.Errorf("Err = %v", out.Err)
			}

			// The program is over: any connection it made is queued
			// before this one.
			sentinel, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer sentinel.Close()
			var got []string
			for {
				select {
				case a := <-accepted:
					got = append(got, a)
				case <-time.After(10 * time.Second):
					t.Fatal("the listener did not accept the test's own connection")
				}
				if got[len(got)-1] == sentinel.LocalAddr().String() {
					break
				}
			}
			if n := len(got) - 1; (n == 1) != tt.wantConn || n > 1 {
				t.Errorf("the listener saw %d connections from the program (%v)", n, got[:n])
			}
		})
	}
}

func TestSandboxFiles(t *testing.T) {
	needBwrap(t)
	outside := outsideTmp(t)
	writable := t.TempDir()
	private := fmt.Sprintf("/tmp/mcpe-bash-private-%d", rand.Int64())
	t.Cleanup(func() { os.Remove(private) })

	// Each line tries to write a file and says whether it could.
	script := `try() { if { echo x > "$2"; } 2>/dev/null; then echo "$1 written"; else echo "$1 refused"; fi; }
try outside "$1/file"
try writable "$2/file"
try inside ./file
try home "$HOME/file2"
try tmp "$3"
try root /mcpe-bash-test-root`
	tests := []struct {
		name    string
		command Command
		want    string
		onHost  map[string]bool
	}{
		{
			name:    "read-only root",
			command: Command{Path: "/bin/sh", WritablePaths: []string{writable}},
			want:    "outside refused\nwritable written\ninside written\nhome written\ntmp written\nroot refused\n",
			onHost:  map[string]bool{outside + "/file": false, writable + "/file": true, private: false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRunner(t, Options{Sandbox: SandboxBwrap, Commands: map[string]Command{"sh": tt.command}})
			out := r.Handle(context.Background(), eventInv(bashSpec("sh", "", "-c", script, "sh", outside, writable, private), event(t, map[string]any{})))
			if out.Err != nil {
				t.Fatalf("Handle: %v", out.Err)
			}
			if diff := cmp.Diff(tt.want, out.Output); diff != "" {
				t.Errorf("Output mismatch (-want +got):\n%s", diff)
			}
			for path, want := range tt.onHost {
				_, err := os.Stat(path)
				if got := err == nil; got != want {
					t.Errorf("%s exists on the host: %v, want %v (%v)", path, got, want, err)
				}
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Error(err)
				}
			}
			os.Remove(outside + "/file")
			os.Remove(writable + "/file")
		})
	}
}

// TestSandboxIsolation checks that the program has no capabilities and
// sees only its own processes.
func TestSandboxIsolation(t *testing.T) {
	needBwrap(t)
	r := newRunner(t, Options{Sandbox: SandboxBwrap, Commands: map[string]Command{"sh": {Path: "/bin/sh"}}})
	script := `grep CapEff /proc/self/status; ls /proc | grep -c '^[0-9]'`
	out := r.Handle(context.Background(), eventInv(bashSpec("sh", "", "-c", script), event(t, map[string]any{})))
	if out.Err != nil {
		t.Fatalf("Handle: %v: %s", out.Err, out.Output)
	}
	fields := strings.Fields(out.Output)
	// CapEff, and the processes: the sandbox's init, sh, ls and grep.
	if len(fields) != 3 || fields[1] != "0000000000000000" || len(fields[2]) != 1 {
		t.Errorf("Output = %q, want no capabilities and a handful of processes", out.Output)
	}
}

// outsideTmp returns a new directory on the host outside /tmp, which the
// sandbox replaces with its own: in /var/tmp, or in the package's directory.
func outsideTmp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "mcpe-bash-test-")
	if err != nil {
		if dir, err = os.MkdirTemp(".", "mcpe-bash-test-"); err != nil {
			t.Fatal(err)
		}
		if dir, err = filepath.Abs(dir); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// writeFiles writes each file of files under dir, with its parents, and
// returns dir.
func writeFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o600)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSandboxHiddenPaths reproduces a program that reads the server's
// state: an allowed cat given the path of the configuration file, of the
// database or its companions, of the data directory, of the server user's
// home or runtime directory gets nothing from them, while what the command's
// own paths need stays visible.
func TestSandboxHiddenPaths(t *testing.T) {
	needBwrap(t)
	base := writeFiles(t, outsideTmp(t), map[string]string{
		"data/mcpe.db":       "SECRET-db whsec_db",
		"data/mcpe.db-wal":   "SECRET-wal whsec_wal",
		"data/mcpe.db-shm":   "SECRET-shm",
		"data/backup.db":     "SECRET-backup",
		"data/out/.keep":     "",
		"data/tool.sh":       "#!/bin/sh\necho tool ran\n",
		"etc/config.yaml":    "SECRET-config token: abc",
		"etc/other.txt":      "visible-other",
		"lone/app.db":        "SECRET-app",
		"lone/app.db-wal":    "SECRET-app-wal",
		"lone/app.db-shm":    "SECRET-app-shm",
		"lone/readme":        "visible-readme",
		"linked/secret":      "SECRET-linked",
		"home/.ssh/id":       "SECRET-home-key",
		"home/.config/token": "SECRET-home-token",
		"home/bin/prog":      "#!/bin/sh\necho prog ran; ls -A \"$1\"; cat \"$2\"\n",
		"home/lib/mod":       "visible-lib",
		"run/bus":            "SECRET-runtime",
	})
	if err := os.Symlink(filepath.Join(base, "linked"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(base, "run"))
	p := func(name string) string { return filepath.Join(base, name) }
	r := newRunner(t, Options{
		Sandbox: SandboxBwrap,
		HiddenPaths: []string{
			p("data/mcpe.db"), p("data"), p("etc/config.yaml"), p("lone/app.db"), p("link"), p("missing"),
		},
		Commands: map[string]Command{
			"cat":  {Path: "/bin/cat"},
			"sh":   {Path: "/bin/sh", WritablePaths: []string{p("data/out"), p("etc")}},
			"tool": {Path: p("data/tool.sh")},
			"prog": {Path: p("home/bin/prog"), ReadablePaths: []string{p("home/lib")}},
		},
	})
	run := func(command string, args ...string) string {
		t.Helper()
		out := r.Handle(context.Background(), eventInv(bashSpec(command, "", args...), event(t, map[string]any{})))
		return out.Output
	}
	for _, name := range []string{
		"data/mcpe.db", "data/mcpe.db-wal", "data/mcpe.db-shm", "data/backup.db", "etc/config.yaml",
		"lone/app.db", "lone/app.db-wal", "lone/app.db-shm", "link/secret", "linked/secret", "home/.ssh/id", "home/.config/token", "run/bus",
	} {
		if out := run("cat", p(name)); strings.Contains(out, "SECRET") {
			t.Errorf("cat %s read %q", name, out)
		}
	}
	// Only the listed files are hidden, not their directories.
	for name, want := range map[string]string{"etc/other.txt": "visible-other", "lone/readme": "visible-readme"} {
		if out := run("cat", p(name)); out != want {
			t.Errorf("cat %s = %q, want %q", name, out, want)
		}
	}
	// A writable path shows itself alone in a private directory; a private
	// file in a writable path stays hidden.
	script := `echo w > "$1/data/out/f" && ls -A "$1/data" && cat "$1/etc/other.txt" && cat "$1/etc/config.yaml" 2>/dev/null`
	if out, want := run("sh", "-c", script, "sh", base), "out\nvisible-other"; out != want {
		t.Errorf("sh = %q, want %q", out, want)
	}
	if b, err := os.ReadFile(p("data/out/f")); err != nil || string(b) != "w\n" {
		t.Errorf("the program did not write its writable path in a private directory: %q, %v", b, err)
	}
	// A program in a private directory, or in the hidden home, runs; in the
	// home it sees itself and its readable paths only.
	if out, want := run("tool"), "tool ran\n"; out != want {
		t.Errorf("tool = %q, want %q", out, want)
	}
	if out, want := run("prog", p("home"), p("home/lib/mod")), "prog ran\nbin\nlib\nvisible-lib"; out != want {
		t.Errorf("prog = %q, want %q", out, want)
	}
}

// TestBwrapArgsLayout checks the order of the mounts, which decides what
// shows: parents first, a path shown again over what hides it, a private
// path hidden again inside a path shown, nothing hidden twice.
func TestBwrapArgsLayout(t *testing.T) {
	root := writeFiles(t, t.TempDir(), map[string]string{
		"home/bin/helper": "#!",
		"home/bin/prog":   "#!",
		"home/lib/x":      "",
		"w/db":            "",
		"w/db-wal":        "",
		"work/run1/.keep": "",
	})
	p := func(name string) string { return filepath.Join(root, name) }
	sp := &sandboxPaths{private: []string{p("w/db"), p("missing")}, hidden: []string{p("home"), "/"}, helper: p("home/bin/helper")}
	c := &Command{Path: p("home/bin/prog"), WritablePaths: []string{p("w")}, ReadablePaths: []string{p("home/lib")}}
	got := bwrapArgs(c, sp, p("work/run1"))
	want := []string{
		"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		// The home is in /tmp, hidden already.
		"--bind", p("w"), p("w"),
		"--ro-bind", p("home/lib"), p("home/lib"),
		"--ro-bind", "/dev/null", p("w/db"),
		"--ro-bind", "/dev/null", p("w/db-wal"),
		"--bind", p("work/run1"), p("work/run1"),
		"--ro-bind", p("home/bin/helper"), p("home/bin/helper"),
		"--ro-bind", p("home/bin/prog"), p("home/bin/prog"),
		"--chdir", p("work/run1"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bwrapArgs mismatch (-want +got):\n%s", diff)
	}

	// Outside /tmp: a hidden directory is an empty one, and what lies in it
	// is shown again; a program visible already is not bound again.
	base := writeFiles(t, outsideTmp(t), map[string]string{"lib/x": "", "w/f": ""})
	q := func(name string) string { return filepath.Join(base, name) }
	sp = &sandboxPaths{hidden: []string{base}, private: []string{q("w/f")}}
	c = &Command{Path: "/bin/sh", ReadablePaths: []string{q("lib")}, WritablePaths: []string{q("w")}}
	got = bwrapArgs(c, sp, "")
	want = []string{
		"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--tmpfs", base,
		"--ro-bind", q("lib"), q("lib"),
		"--bind", q("w"), q("w"),
		"--ro-bind", "/dev/null", q("w/f"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bwrapArgs mismatch (-want +got):\n%s", diff)
	}
}
