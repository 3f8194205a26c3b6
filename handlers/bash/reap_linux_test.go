package bash

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSessionLeftoversKilled runs a program that starts a process in a
// session of its own (setsid), which leaves the program's process group,
// then exits or hangs until the timeout: the process is killed when the run
// ends, with the sandbox (its pid namespace) and without it (the reaper).
func TestSessionLeftoversKilled(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep program")
	}
	for _, sandbox := range []string{SandboxOff, SandboxBwrap} {
		for _, mode := range []string{"detach", "detach-hang"} {
			t.Run(sandbox+"/"+mode, func(t *testing.T) {
				if sandbox == SandboxBwrap {
					needBwrap(t)
				}
				r := newRunner(t, Options{Sandbox: sandbox, Commands: map[string]Command{"detach": helperCommand(t, mode)}})
				token := fmt.Sprintf("%d.%06d", 100+rand.IntN(800), rand.IntN(1000000))
				spec := bashSpec("detach", "", sleep, token)
				// Long enough for the program to start and print, under
				// the race detector too.
				spec.Timeout = 1000
				start := time.Now()
				out := r.Handle(context.Background(), eventInv(spec, event(t, map[string]any{})))
				elapsed := time.Since(start)
				if out.Output != "started\n" {
					t.Errorf("Output = %q, want \"started\\n\" (Err %v)", out.Output, out.Err)
				}
				switch mode {
				case "detach":
					if out.Err != nil {
						t.Errorf("Err = %v, want success", out.Err)
					}
					if elapsed >= drainDelay {
						t.Errorf("Handle returned after %v: it waited for the output of a process that should be dead", elapsed)
					}
				case "detach-hang":
					if want := `^killed after 1s, the run's timeout: started$`; out.Err == nil || !regexp.MustCompile(want).MatchString(out.Err.Error()) {
						t.Errorf("Err = %v, want one matching %s", out.Err, want)
					}
				}
				// SIGKILL was sent; the process may take a moment to go.
				deadline := time.Now().Add(2 * time.Second)
				for {
					pids := liveProcesses(t, sleep, token)
					if len(pids) == 0 {
						break
					}
					if time.Now().After(deadline) {
						killAllPids(pids)
						t.Fatalf("processes %v (sleep %s), in a session of their own, outlived the run", pids, token)
					}
					time.Sleep(10 * time.Millisecond)
				}
			})
		}
	}
}

// TestHelperOnlyForTheServer runs the server's own executable (here the
// test binary) as an allowed command with the helper's arguments, as a
// model may write them: it does not become the helper, which would run the
// program it is given.
func TestHelperOnlyForTheServer(t *testing.T) {
	for _, sandbox := range []string{SandboxOff, SandboxBwrap} {
		t.Run(sandbox, func(t *testing.T) {
			if sandbox == SandboxBwrap {
				needBwrap(t)
			}
			r := newRunner(t, Options{Sandbox: sandbox, Commands: map[string]Command{"self": helperCommand(t, "echo")}})
			args := []string{helperArg, helperExec, "core=0", "/bin/sh", "-c", "echo pwned"}
			rep := runEcho(t, r, eventInv(bashSpec("self", "", args...), event(t, map[string]any{})))
			if diff := cmp.Diff(args, rep.Args); diff != "" {
				t.Errorf("the program's arguments (-want +got):\n%s", diff)
			}
			if _, ok := rep.Env[helperMarkEnv]; ok {
				t.Errorf("the program's environment holds %s", helperMarkEnv)
			}
		})
	}
}
