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
	// A directory on the host outside /tmp, which the sandbox replaces
	// with its own: /var/tmp, or the package's directory.
	outside, err := os.MkdirTemp("/var/tmp", "mcpe-bash-test-")
	if err != nil {
		if outside, err = os.MkdirTemp(".", "mcpe-bash-test-"); err != nil {
			t.Fatal(err)
		}
		if outside, err = filepath.Abs(outside); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
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
	rw := false
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
		{
			name:    "writable root",
			command: Command{Path: "/bin/sh", ReadOnlyRoot: &rw},
			// The writable directory is in the host's /tmp, which the
			// sandbox hides.
			want:   "outside written\nwritable refused\ninside written\nhome written\ntmp written\n",
			onHost: map[string]bool{outside + "/file": true, private: false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRunner(t, Options{Sandbox: SandboxBwrap, Commands: map[string]Command{"sh": tt.command}})
			s := script
			if !tt.command.readOnlyRoot() {
				// Do not write to the host's root for real.
				s = strings.TrimSuffix(s, "\ntry root /mcpe-bash-test-root")
			}
			out := r.Handle(context.Background(), eventInv(bashSpec("sh", "", "-c", s, "sh", outside, writable, private), event(t, map[string]any{})))
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
