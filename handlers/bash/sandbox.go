package bash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// probeTimeout bounds the test run of bubblewrap in New.
const probeTimeout = 10 * time.Second

// findBwrap returns the bubblewrap program to use, or "" to run without a
// sandbox. It fails when the sandbox is required and bubblewrap is missing
// or does not work on this system.
func findBwrap(o *Options) (string, error) {
	if o.Sandbox == SandboxOff {
		return "", nil
	}
	required := o.Sandbox == SandboxBwrap
	path := o.BwrapPath
	if path == "" {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			if required {
				return "", errors.New(`bash: sandbox is "bwrap" but bwrap is not in PATH; install bubblewrap (apt-get install bubblewrap), set bwrapPath, or set sandbox to "auto" or "off"`)
			}
			o.Logger.Warn("bash handler: bubblewrap not found; programs run without a sandbox (install bubblewrap: apt-get install bubblewrap)")
			return "", nil
		}
		path = p
	} else if err := checkExecutable(path); err != nil {
		if required {
			return "", fmt.Errorf("bash: bwrapPath: %w", err)
		}
		o.Logger.Warn("bash handler: bubblewrap not usable; programs run without a sandbox", "bwrap", path, "error", err)
		return "", nil
	}
	if err := probeBwrap(path); err != nil {
		if required {
			return "", fmt.Errorf("bash: sandbox is \"bwrap\" but %w", err)
		}
		o.Logger.Warn("bash handler: bubblewrap does not work here; programs run without a sandbox", "bwrap", path, "error", err)
		return "", nil
	}
	return path, nil
}

// probeBwrap runs bubblewrap once with the options of a run, so that a
// system where it cannot create namespaces is found at start.
func probeBwrap(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	args := append(bwrapArgs(&Command{}, ""), "--", path, "--version")
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=" + DefaultPath}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s does not work on this system: %s", path, msg)
	}
	return nil
}

// bwrapArgs returns bubblewrap's options for a run of c in the working
// directory wd ("" for none), before the "--" that ends them.
func bwrapArgs(c *Command, wd string) []string {
	args := []string{
		"--unshare-all",
		"--die-with-parent",
		"--new-session",
		"--cap-drop", "ALL",
	}
	if c.Network {
		args = append(args, "--share-net")
	}
	if c.readOnlyRoot() {
		args = append(args, "--ro-bind", "/", "/")
	} else {
		args = append(args, "--bind", "/", "/")
	}
	args = append(args,
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
	)
	// After the tmpfs, so that paths under /tmp show through it: the
	// program itself (read-only), then the writable paths.
	if strings.HasPrefix(c.Path, "/tmp/") {
		args = append(args, "--ro-bind", c.Path, c.Path)
	}
	for _, p := range c.WritablePaths {
		args = append(args, "--bind", p, p)
	}
	if wd != "" {
		args = append(args, "--bind", wd, wd, "--chdir", wd)
	}
	return args
}
