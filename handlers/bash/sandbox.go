package bash

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// probeTimeout bounds the test run of bubblewrap in New.
const probeTimeout = 10 * time.Second

// newSandboxPaths returns what the sandbox of o hides, and the helper it
// runs: the server's executable.
func newSandboxPaths(o *Options) (sandboxPaths, error) {
	sp := sandboxPaths{private: o.HiddenPaths, hidden: []string{o.WorkRoot}}
	if slices.Contains(o.HiddenPaths, "/") {
		o.Logger.Warn("bash handler: the root directory cannot be hidden", "path", "/", "hint", "list the paths in it instead")
	}
	// The server's home holds what its user keeps private: keys,
	// tokens, shell history; its runtime directory, the sockets of its
	// session (D-Bus, systemd, an SSH agent), through which a program
	// would act outside the sandbox. A command's paths in them are shown
	// again.
	home, _ := os.UserHomeDir()
	for _, dir := range []string{home, os.Getenv("XDG_RUNTIME_DIR"), fmt.Sprintf("/run/user/%d", os.Getuid())} {
		if filepath.IsAbs(dir) && !slices.Contains(sp.hidden, filepath.Clean(dir)) {
			sp.hidden = append(sp.hidden, filepath.Clean(dir))
		}
	}
	if o.Sandbox == SandboxOff || !helperSupported {
		return sp, nil
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return sp, fmt.Errorf("bash: find the server's executable, which runs in the sandbox to set a run's limits: %w", err)
	}
	sp.helper = exe
	return sp, nil
}

// findBwrap returns the bubblewrap program to use, or "" to run without a
// sandbox. It fails when the sandbox is required and bubblewrap is missing
// or does not work on this system.
func findBwrap(o *Options, sp *sandboxPaths) (string, error) {
	if o.Sandbox == SandboxOff {
		return "", nil
	}
	required := o.Sandbox == SandboxBwrap
	path, err := exec.LookPath("bwrap")
	if err != nil {
		if required {
			return "", errors.New(`bash: sandbox is "bwrap" but bwrap is not in PATH; install bubblewrap (apt-get install bubblewrap), or set sandbox to "auto" or "off"`)
		}
		o.Logger.Warn("bash handler: bubblewrap not found; programs run without a sandbox", "hint", "apt-get install bubblewrap")
		return "", nil
	}
	if err := probeBwrap(path, sp.helper); err != nil {
		if required {
			return "", fmt.Errorf("bash: sandbox is \"bwrap\" but %w", err)
		}
		o.Logger.Warn("bash handler: bubblewrap does not work here; programs run without a sandbox", "bwrap", path, "error", err)
		return "", nil
	}
	return path, nil
}

// probeBwrap runs bubblewrap once with the options of a run, and the helper
// in it unless helper is "", so that a system where it cannot create
// namespaces, or where the helper cannot run in the sandbox, is found at
// start.
func probeBwrap(path, helper string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	run := []string{path, "--version"}
	if helper != "" {
		run = slices.Concat([]string{helper, helperArg, helperExec, Limits{}.spec()}, run)
	}
	args := slices.Concat(bwrapArgs(&Command{}, &sandboxPaths{helper: helper}, ""), []string{"--"}, run)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=" + DefaultPath, helperMarkEnv + "=" + helperArg}
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s does not work on this system: %s", path, msg)
	}
	return nil
}
