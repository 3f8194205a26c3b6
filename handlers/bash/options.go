package bash

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Defaults for Options.
const (
	DefaultTimeout       = 30 * time.Second
	DefaultMaxTimeout    = 5 * time.Minute
	DefaultMaxConcurrent = 4
	// maxOutput bounds the output kept of one run, in bytes; the rest is
	// read and dropped. Tests set a Runner's own.
	maxOutput = 64 << 10
	// DefaultPath is the PATH a program gets unless its command sets one.
	DefaultPath = "/usr/local/bin:/usr/bin:/bin"
)

// The values of Options.Sandbox.
const (
	// SandboxAuto runs programs under bubblewrap when it is installed and
	// works, and without a sandbox otherwise.
	SandboxAuto = "auto"
	// SandboxBwrap requires bubblewrap: New fails without it.
	SandboxBwrap = "bwrap"
	// SandboxOff runs programs without a sandbox.
	SandboxOff = "off"
)

// Options configure a Runner. A nil *Options means all defaults, which allow
// no command.
type Options struct {
	// Commands are the programs a subscription may run, by the name it
	// gives in handler.command. Zero: none, and every subscription with a
	// bash handler is refused.
	Commands map[string]Command
	// DefaultTimeout bounds a run whose subscription sets no timeout.
	// Zero: DefaultTimeout (30s); at most MaxTimeout.
	DefaultTimeout time.Duration
	// MaxTimeout is the longest timeout a subscription may set. Zero:
	// DefaultMaxTimeout (5m).
	MaxTimeout time.Duration
	// MaxConcurrent bounds the programs running at once; further runs
	// wait for a slot, for as long as their context allows, and their
	// timeout starts once they have one. Zero: DefaultMaxConcurrent (4).
	MaxConcurrent int
	// Sandbox is SandboxAuto, SandboxBwrap or SandboxOff. Zero:
	// SandboxAuto.
	Sandbox string
	// WorkRoot is the directory under which each run gets a fresh working
	// directory, removed after the run; it is created if missing. Inside the
	// sandbox a run sees its own working directory there and nothing else.
	// Zero: os.TempDir().
	WorkRoot string
	// HiddenPaths are files and directories no program may see inside the
	// sandbox, not even inside a path a command shows (WritablePaths,
	// ReadablePaths): the server's database and its directory, its
	// configuration file, its data directory. A directory is replaced by an
	// empty one, a file by an empty file, and so are a file's SQLite
	// companions (-wal, -shm, -journal) that exist when a run starts; a
	// path that does not exist then is skipped, and "/" cannot be hidden.
	// The home and runtime directories of the user the server runs as
	// ($HOME, $XDG_RUNTIME_DIR, /run/user/<uid>) are hidden as well, but
	// show what a command's paths need in them. They are set by the
	// program that builds the Runner, not by the configuration file; a
	// relative path is taken from the current directory. Zero: only the
	// user's directories and WorkRoot are hidden. Without the sandbox nothing
	// is hidden.
	HiddenPaths []string
	// Logger logs each run, and a sandbox that cannot be used. Zero: discard.
	Logger *slog.Logger
	// Clock times each run for the log. Zero: the wall clock. A run's
	// timeout is a deadline of the operating system, on the wall clock in
	// any case.
	Clock clock.Clock
}

// Command is a program the operator allows.
type Command struct {
	// Path is the program's absolute path; New checks that it is an
	// executable file. Required.
	Path string
	// Env are variables the program gets besides the MCPE_* ones, PATH,
	// HOME and PWD; they may override PATH and HOME but not the MCPE_*
	// variables. Zero: none.
	Env map[string]string
	// Network lets the program reach the network inside the sandbox.
	// Zero: no network, not even the host's loopback. Without a sandbox
	// a program always has the server's network.
	Network bool
	// WritablePaths are absolute paths, which must exist, bound
	// read-write inside the sandbox. Zero: only the working directory and
	// a private /tmp are writable.
	WritablePaths []string
	// ReadablePaths are absolute paths, which must exist, that the
	// program may read inside the sandbox although they lie in a hidden
	// directory, such as a program's libraries in the server user's home.
	// The program's own path is always readable. Zero: none.
	ReadablePaths []string
	// AllowOptions lets the arguments a subscription writes start with
	// '-' (options, such as "-u" "critical"); false refuses such an
	// argument, so that the program gets operands only. Zero (nil): true.
	AllowOptions *bool
	// AllowOptionPlaceholders lets a placeholder put a leading '-' in an
	// argument, as "$MCPE_EVENT_TAGS" does when an event's first tag is
	// "--output=/x"; false refuses such a run, so that what an event
	// sender wrote never reaches the program as an option. Zero: false.
	AllowOptionPlaceholders bool
	// Limits bound the program's processes, memory, file sizes and open
	// files, with or without the sandbox. Zero: the defaults of Limits.
	Limits Limits
}

// allowOptions reports whether a subscription's arguments may start with '-'.
func (c *Command) allowOptions() bool { return c.AllowOptions == nil || *c.AllowOptions }

var (
	// commandName is the form of a command's name.
	commandName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	// envName is the form of a variable's name.
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// withDefaults returns a deep copy of o with the zero fields set to their
// defaults, or an error naming the first field that is wrong. It checks the
// commands' programs on disk; the sandbox is resolved by New.
func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if err := c.Validate(); err != nil {
		return Options{}, err
	}
	var hidden []string
	for _, p := range c.HiddenPaths {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return Options{}, fmt.Errorf("hidden path %q: %w", p, err)
		}
		hidden = append(hidden, abs)
	}
	c.HiddenPaths = hidden
	if err := c.checkDisk(); err != nil {
		return Options{}, err
	}
	c.MaxTimeout = cmp.Or(c.MaxTimeout, DefaultMaxTimeout)
	c.DefaultTimeout = min(cmp.Or(c.DefaultTimeout, DefaultTimeout), c.MaxTimeout)
	c.MaxConcurrent = cmp.Or(c.MaxConcurrent, DefaultMaxConcurrent)
	c.Sandbox = cmp.Or(c.Sandbox, SandboxAuto)
	c.WorkRoot = cmp.Or(c.WorkRoot, os.TempDir())
	root, err := filepath.Abs(c.WorkRoot)
	if err != nil {
		return Options{}, mcpe.Invalid("workRoot", "%q: %v", c.WorkRoot, err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return Options{}, mcpe.Invalid("workRoot", "%v", err)
	}
	c.WorkRoot = root
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	c.Clock = cmp.Or[clock.Clock](c.Clock, clock.Real{})
	cmds := make(map[string]Command, len(c.Commands))
	for name, cmd := range c.Commands {
		cmd.Env = maps.Clone(cmd.Env)
		cmd.WritablePaths = slices.Clone(cmd.WritablePaths)
		cmd.ReadablePaths = slices.Clone(cmd.ReadablePaths)
		allow := cmd.allowOptions()
		cmd.AllowOptions = &allow
		cmds[name] = cmd
	}
	c.Commands = cmds
	return c, nil
}

// Validate checks the settings of o without looking at the disk; New also
// checks that each command's program is an executable file and that its
// writable paths exist. An error is an *mcpe.InvalidError whose Field is
// the setting's key in the configuration file, relative to the bash
// handler's section, such as "sandbox" or "commands.notify.path".
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	switch o.Sandbox {
	case "", SandboxAuto, SandboxBwrap, SandboxOff:
	default:
		return mcpe.Invalid("sandbox", "%q is not a sandbox mode; use %q (bubblewrap when installed, the default), %q (bubblewrap required) or %q", o.Sandbox, SandboxAuto, SandboxBwrap, SandboxOff)
	}
	for _, name := range slices.Sorted(maps.Keys(o.Commands)) {
		field := "commands." + name
		if !commandName.MatchString(name) {
			return mcpe.Invalid(field, "a command name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
		}
		if err := o.Commands[name].validate(field); err != nil {
			return err
		}
	}
	return nil
}

// validate checks c, named field in errors, without looking at the disk.
func (c Command) validate(field string) error {
	if c.Path == "" {
		return mcpe.Invalid(field+".path", "is required: the program's absolute path, such as /usr/bin/notify-send")
	}
	if !filepath.IsAbs(c.Path) {
		return mcpe.Invalid(field+".path", "%q is not an absolute path; give the program's absolute path, such as /usr/bin/notify-send", c.Path)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		if !envName.MatchString(k) || strings.HasPrefix(k, "MCPE_") {
			return mcpe.Invalid(field+".env", "%q is not a variable name the operator may set (letters, digits and '_', not starting with a digit or with MCPE_)", k)
		}
		if strings.ContainsRune(c.Env[k], 0) {
			return mcpe.Invalid(field+".env."+k, "the value contains a NUL character, which no environment variable can hold")
		}
	}
	for i, p := range c.WritablePaths {
		if !filepath.IsAbs(p) {
			return mcpe.Invalid(fmt.Sprintf("%s.writablePaths[%d]", field, i), "%q is not an absolute path; give one such as /var/tmp/out", p)
		}
	}
	for i, p := range c.ReadablePaths {
		if !filepath.IsAbs(p) {
			return mcpe.Invalid(fmt.Sprintf("%s.readablePaths[%d]", field, i), "%q is not an absolute path; give one such as /home/mcpe/.local/lib", p)
		}
	}
	return c.Limits.validate(field)
}

// checkDisk checks that each command's program is an executable file, that
// its writable and readable paths exist, and that none of them is one of the
// hidden paths.
func (o *Options) checkDisk() error {
	private := make(map[string]bool)
	for _, p := range o.HiddenPaths {
		private[p] = true
		if r := resolve(p); r != "" {
			private[r] = true
		}
	}
	isPrivate := func(key, p string) error {
		if private[p] || private[resolve(p)] {
			return mcpe.Invalid(key, "%s is private to the server (its database, configuration or data), which no handler program may see; use another path", p)
		}
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(o.Commands)) {
		field := "commands." + name
		c := o.Commands[name]
		if err := checkExecutable(c.Path); err != nil {
			return mcpe.Invalid(field+".path", "%v", err)
		}
		if err := isPrivate(field+".path", c.Path); err != nil {
			return err
		}
		for _, list := range []struct {
			key   string
			paths []string
		}{{"writablePaths", c.WritablePaths}, {"readablePaths", c.ReadablePaths}} {
			for i, p := range list.paths {
				key := fmt.Sprintf("%s.%s[%d]", field, list.key, i)
				if _, err := os.Stat(p); err != nil {
					return mcpe.Invalid(key, "%v; the path must exist to be bound into the sandbox", err)
				}
				if err := isPrivate(key, p); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkExecutable tells whether path is a file someone may execute.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory, not a program", path)
	}
	if fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not executable (mode %v); chmod +x it", path, fi.Mode().Perm())
	}
	return nil
}
