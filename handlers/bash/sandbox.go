package bash

import (
	"bytes"
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
	for _, p := range o.HiddenPaths {
		if p == "/" {
			o.Logger.Warn("bash handler: the root directory cannot be hidden from handler programs; list the paths in it instead", "path", p)
		}
	}
	// The server's home holds what its user keeps private: keys,
	// tokens, shell history; its runtime directory, the sockets of its
	// session (D-Bus, systemd, an SSH agent), through which a program
	// would act outside the sandbox. A command's paths in them are shown
	// again.
	for _, dir := range []string{homeDir(), os.Getenv("XDG_RUNTIME_DIR"), fmt.Sprintf("/run/user/%d", os.Getuid())} {
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

// homeDir returns the home directory of the server's user, or "".
func homeDir() string {
	home, _ := os.UserHomeDir()
	return home
}

// findBwrap returns the bubblewrap program to use, or "" to run without a
// sandbox. It fails when the sandbox is required and bubblewrap is missing
// or does not work on this system.
func findBwrap(o *Options, sp *sandboxPaths) (string, error) {
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

// sandboxPaths are the paths a sandbox hides or shows besides a command's
// own.
type sandboxPaths struct {
	// private are hidden even inside a path a command shows
	// (Options.HiddenPaths).
	private []string
	// hidden are hidden unless a command shows a path in them: the home
	// directory of the server's user, the work root.
	hidden []string
	// helper is the server's executable, which sets the limits inside the
	// sandbox and runs the program; "" when it is not needed (the probe).
	helper string
}

// mountKind is what a mount of the sandbox does at its path.
type mountKind int

// The kinds of mounts, in the order they apply to one path: a path that is
// hidden and shown is shown, unless it is private.
const (
	mountDev     mountKind = iota // --dev: a minimal /dev
	mountProc                     // --proc: the sandbox's own /proc
	mountHide                     // an empty directory or file in place of the host's
	mountRO                       // the host's path, read-only
	mountRW                       // the host's path, read-write
	mountPrivate                  // like mountHide, but over what a command shows
)

// hides tells whether k makes the host's path invisible.
func (k mountKind) hides() bool { return k != mountRO && k != mountRW }

// mount is one mount of the sandbox's file system.
type mount struct {
	path string
	kind mountKind
}

// within tells whether path is dir or lies under it.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// resolve returns the absolute path p with its symbolic links followed, or
// "" when it does not exist.
func resolve(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}

// bwrapArgs returns bubblewrap's options for a run of c in the working
// directory wd ("" for none), before the "--" that ends them. sp, which may
// be nil, adds what the sandbox hides and the helper.
//
// The file system is the host's root, read-only unless c says otherwise, and
// on top of it mounts sorted by depth, so that a mount at a path applies
// under the mounts of its parents: /dev, /proc and an empty /tmp; empty
// directories or files in place of the hidden paths (the server's home, the
// work root) and of the private ones; then the paths the run needs, bound
// again over what hides them: the helper and the program (read-only), the
// command's readable and writable paths, the working directory; and last the
// private paths that lie inside one of those, hidden again. A symbolic link
// is followed to the path it names, which is the one mounted.
func bwrapArgs(c *Command, sp *sandboxPaths, wd string) []string {
	args := []string{
		"--unshare-all",
		"--die-with-parent",
		"--new-session",
		"--cap-drop", "ALL",
	}
	if c.Network {
		args = append(args, "--share-net")
	}
	root := mount{"/", mountRW}
	if c.readOnlyRoot() {
		root.kind = mountRO
	}
	args = append(args, root.args()...)

	mounts := []mount{{"/dev", mountDev}, {"/proc", mountProc}, {"/tmp", mountHide}}
	hide := func(p string, kind mountKind) {
		if r := resolve(p); r != "" && r != "/" {
			mounts = append(mounts, mount{r, kind})
		}
	}
	show := func(p string, kind mountKind) {
		if r := resolve(p); r != "" {
			p = r
		}
		mounts = append(mounts, mount{filepath.Clean(p), kind})
	}
	if sp != nil {
		for _, p := range sp.hidden {
			hide(p, mountHide)
		}
		for _, p := range sp.private {
			hide(p, mountPrivate)
			// A database file's companions hold its data too, beside
			// the path it was opened by or the file it names.
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				for _, suffix := range []string{"-wal", "-shm", "-journal"} {
					hide(p+suffix, mountPrivate)
					hide(resolve(p)+suffix, mountPrivate)
				}
			}
		}
		if sp.helper != "" {
			show(sp.helper, mountRO)
		}
	}
	if c.Path != "" {
		show(c.Path, mountRO)
	}
	for _, p := range c.ReadablePaths {
		show(p, mountRO)
	}
	for _, p := range c.WritablePaths {
		show(p, mountRW)
	}
	if wd != "" {
		show(wd, mountRW)
	}
	slices.SortStableFunc(mounts, func(a, b mount) int {
		if d := strings.Count(a.path, "/") - strings.Count(b.path, "/"); d != 0 {
			return d
		}
		if d := strings.Compare(a.path, b.path); d != 0 {
			return d
		}
		return int(a.kind) - int(b.kind)
	})

	done := []mount{root}
	for _, m := range mounts {
		// The mount in force at m.path: the last one done at it or above
		// it, since parents sort first.
		var above mount
		for i := len(done) - 1; i >= 0; i-- {
			if within(m.path, done[i].path) {
				above = done[i]
				break
			}
		}
		switch {
		case above == m:
		case m.kind.hides() && m.kind != mountDev && m.kind != mountProc && above.kind.hides():
			// Hidden already.
		case m.kind == mountRO && !above.kind.hides():
			// Visible already: the program and readable paths are
			// bound only to show them where something hides them.
		default:
			done = append(done, m)
			args = append(args, m.args()...)
		}
	}
	if wd != "" {
		args = append(args, "--chdir", wd)
	}
	return args
}

// args returns bubblewrap's options for m.
func (m mount) args() []string {
	switch m.kind {
	case mountDev:
		return []string{"--dev", m.path}
	case mountProc:
		return []string{"--proc", m.path}
	case mountRO:
		return []string{"--ro-bind", m.path, m.path}
	case mountRW:
		return []string{"--bind", m.path, m.path}
	}
	if fi, err := os.Stat(m.path); err == nil && !fi.IsDir() {
		return []string{"--ro-bind", "/dev/null", m.path}
	}
	return []string{"--tmpfs", m.path}
}
