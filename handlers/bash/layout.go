package bash

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// sandboxPaths are the paths a sandbox hides or shows besides a command's
// own.
type sandboxPaths struct {
	// private are hidden even inside a path a command shows
	// (Options.HiddenPaths).
	private []string
	// hidden are hidden unless a command shows a path in them: the home
	// and runtime directories of the server's user, the work root.
	hidden []string
	// helper is the server's executable, which sets the limits inside the
	// sandbox and runs the program; "" without the sandbox.
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
// directory wd ("" for none), before the "--" that ends them. sp adds what
// the sandbox hides and the helper.
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
	root := mount{"/", mountRO}
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
	for _, p := range sp.hidden {
		hide(p, mountHide)
	}
	for _, p := range sp.private {
		hide(p, mountPrivate)
		// A database file's companions hold its data too, beside the
		// path it was opened by or the file it names.
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
		// By depth, then path, then kind.
		return cmp.Or(strings.Count(a.path, "/")-strings.Count(b.path, "/"), strings.Compare(a.path, b.path), int(a.kind)-int(b.kind))
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
