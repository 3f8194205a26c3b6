package bash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

const (
	// workDirPrefix starts the name of each run's working directory.
	workDirPrefix = "mcpe-bash-"
	// maxArgLen is Linux's MAX_ARG_STRLEN: the longest argument or
	// environment string ("NAME=value"), counting its terminating NUL.
	maxArgLen = 32 * 4096
	// drainDelay bounds the wait for the output once the program's
	// process group is dead: only a process that left the group (a new
	// session, outside the sandbox) can still hold the output open.
	drainDelay = time.Second
	// tailLen bounds the tail of the output quoted in an error.
	tailLen = 512
	// reaperGrace bounds the wait for the reaper to kill a run and exit
	// once told to, before its group is killed without it.
	reaperGrace = 5 * time.Second
)

// exit is how a program ended.
type exit struct {
	exited bool   // it exited, rather than being killed by a signal
	code   int    // its exit status, when it exited
	desc   string // "exit status 3", "signal: killed"
}

// environ returns the environment of a run in wd: the variables (the
// payload ones only when withPayload), PATH, HOME and PWD, and the
// command's own variables, sorted.
func environ(c *Command, vars map[string]string, withPayload bool, wd string) []string {
	m := map[string]string{"PATH": DefaultPath, "HOME": wd, "PWD": wd}
	maps.Copy(m, c.Env)
	for k, v := range vars {
		if withPayload || !payloadVar(k) {
			m[k] = v
		}
	}
	env := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		env = append(env, k+"="+m[k])
	}
	return env
}

// checkSizes fails when an argument or a variable cannot be passed to a
// program: too long for Linux, or holding a NUL character.
func checkSizes(argv, env []string) error {
	for i, a := range argv {
		if len(a)+1 > maxArgLen {
			return fmt.Errorf("argument %d is %d bytes long; Linux passes at most %d bytes in one argument; use input \"stdin\" to pass large events", i+1, len(a), maxArgLen-1)
		}
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argument %d contains a NUL character, which cannot be passed in an argument; use input \"stdin\"", i+1)
		}
	}
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if len(kv)+1 > maxArgLen {
			return fmt.Errorf("the variable %s is %d bytes long; Linux passes at most %d bytes in one environment variable; use input \"stdin\" to pass large events", name, len(value), maxArgLen-2-len(name))
		}
		if strings.IndexByte(kv, 0) >= 0 {
			return fmt.Errorf("the variable %s contains a NUL character, which cannot be passed in the environment; use input \"stdin\"", name)
		}
	}
	return nil
}

// reaps tells whether a run goes through the reaper, which kills what the
// program leaves behind: without the sandbox, whose pid namespace does it.
func (r *Runner) reaps() bool { return helperSupported && r.bwrap == "" }

// command returns the program to start for a run of c with the arguments
// argv in wd, its arguments, and whether it runs the helper: under
// bubblewrap, the helper that sets the limits and executes the program;
// without it, the same helper as the child of a reaper; where there is no
// helper, the program itself.
func (r *Runner) command(c *Command, argv []string, wd string) (name string, args []string, helper bool) {
	switch {
	case r.bwrap != "":
		return r.bwrap, slices.Concat(bwrapArgs(c, &r.paths, wd), []string{"--", r.paths.helper, helperArg, helperExec, c.Limits.spec(), c.Path}, argv), true
	case r.reaps():
		// The server's own executable, even if replaced on disk since.
		return "/proc/self/exe", slices.Concat([]string{helperArg, helperReap, c.Limits.spec(), c.Path}, argv), true
	}
	return c.Path, argv, false
}

// run runs the program of c with the arguments argv (without argv[0]) and
// the environment env in wd, for at most timeout, with stdin on standard
// input when useStdin. It returns the output kept and why the run failed.
func (r *Runner) run(ctx context.Context, c *Command, argv, env []string, stdin []byte, useStdin bool, wd string, timeout time.Duration) (string, error) {
	name, args, helper := r.command(c, argv, wd)
	cmd := exec.Command(name, args...)
	cmd.Env = env
	if helper {
		cmd.Env = append(slices.Clip(env), helperMarkEnv+"="+helperArg)
	}
	cmd.Dir = wd
	cmd.SysProcAttr = procAttr(r.reaps())
	var status *statusPipe
	if r.reaps() {
		var err error
		if status, err = newStatusPipe(); err != nil {
			return "", fmt.Errorf("create the status pipe: %w", err)
		}
		defer status.close()
		cmd.ExtraFiles = []*os.File{status.writer()}
	}
	if useStdin {
		f, err := r.stdinFile(stdin)
		if err != nil {
			return "", fmt.Errorf("prepare standard input: %w", err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	// One pipe for standard output and error keeps them in the order
	// written. It is an *os.File, so that exec starts no goroutine that
	// Wait would wait for: the output is read here.
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("create the output pipe: %w", err)
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw

	// The timeout kills a real process, so it runs on the wall clock.
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The program is killed if the thread that started it exits
	// (Pdeathsig): keep this goroutine on it until the program has exited.
	runtime.LockOSThread()
	err = cmd.Start()
	pw.Close()
	status.closeWriter()
	if err != nil {
		runtime.UnlockOSThread()
		if errors.Is(err, syscall.E2BIG) {
			return "", errors.New("the arguments and environment together are too long for the system; use input \"stdin\" to pass large events")
		}
		return "", fmt.Errorf("start %s: %w", c.Path, err)
	}
	pid := cmd.Process.Pid

	out := &capture{max: r.maxOutput}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = io.Copy(out, pr) // to the end, or to the deadline below
	}()

	exited := make(chan struct{})
	killerDone := make(chan struct{})
	var killed bool // written before killerDone is closed
	go func() {
		defer close(killerDone)
		select {
		case <-runCtx.Done():
			r.stop(pid, exited)
			killed = true
		case <-exited:
		}
	}()

	var waitErr error
	reaped := !waitExited(pid)
	if reaped {
		waitErr = cmd.Wait()
	}
	runtime.UnlockOSThread()
	close(exited)
	<-killerDone
	// Kill what the program left running in its group. Unless reaped
	// already, the program is a zombie, so its group's id is not reused.
	killGroup(pid)
	if !reaped {
		waitErr = cmd.Wait()
	}

	select {
	case <-readDone:
	case <-time.After(drainDelay): // a pipe's read deadline is the OS's, on the wall clock
		_ = pr.SetReadDeadline(time.Now())
		<-readDone
	}

	output := out.output()
	state := cmd.ProcessState
	if state == nil {
		return output, fmt.Errorf("wait for %s: %w", c.Path, waitErr)
	}
	// The reaper's status is the program's, when the reaper got it.
	e, ok := status.read()
	if !ok {
		e = exit{exited: state.Exited(), code: state.ExitCode(), desc: state.String()}
	}
	tail := out.tailNote()
	switch {
	case killed && !e.exited && ctx.Err() != nil:
		return output, fmt.Errorf("killed: the run was stopped (%v)%s", context.Cause(ctx), tail)
	case killed && !e.exited:
		return output, fmt.Errorf("killed after %v, the run's timeout%s", timeout, tail)
	case e.exited && e.code == 0:
		return output, nil
	case e.exited:
		return output, fmt.Errorf("exit status %d%s", e.code, tail)
	default:
		return output, fmt.Errorf("%s%s", e.desc, tail)
	}
}

// stop kills the run whose first process is pid, and whatever it started,
// before it exits on its own. exited is closed once pid has exited.
func (r *Runner) stop(pid int, exited <-chan struct{}) {
	if !r.reaps() {
		// The group, or under bubblewrap the sandbox: bubblewrap dies
		// with its group, and its pid namespace with it.
		killGroup(pid)
		return
	}
	// The reaper kills the program and everything that has left the
	// group, then exits; should it not, its group is killed without it.
	terminate(pid)
	select {
	case <-exited:
	case <-time.After(reaperGrace): // a wait for a real process, on the wall clock
		killGroup(pid)
	}
}

// stdinFile returns a read-only file holding b, already unlinked, to be a
// program's standard input: the program reads it at its pace, and nothing
// blocks when it does not read it.
func (r *Runner) stdinFile(b []byte) (*os.File, error) {
	w, err := os.CreateTemp(r.opts.WorkRoot, ".mcpe-stdin-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(w.Name())
	_, err = w.Write(b)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return os.Open(w.Name())
}

// capture keeps the first max bytes written to it and the last tailLen.
type capture struct {
	max   int
	head  []byte
	tail  []byte
	total int64
}

// Write records p. It never fails, so that the output is read to its end.
func (c *capture) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if room := c.max - len(c.head); room > 0 {
		c.head = append(c.head, p[:min(room, len(p))]...)
	}
	c.tail = append(c.tail, p...)
	if n := len(c.tail); n > tailLen {
		c.tail = append(c.tail[:0], c.tail[n-tailLen:]...)
	}
	return len(p), nil
}

// output returns the bytes kept, noting when more were written.
func (c *capture) output() string {
	s := strings.ToValidUTF8(string(c.head), "\uFFFD")
	if c.total > int64(len(c.head)) {
		s += fmt.Sprintf("\n[truncated: %d of %d bytes kept]", len(c.head), c.total)
	}
	return s
}

// tailNote returns ": " and the end of the output, trimmed, or " (no
// output)".
func (c *capture) tailNote() string {
	t := c.tail
	cut := c.total > int64(len(t))
	if cut {
		// Start at a line, or at least at a character.
		if i := bytes.IndexByte(t, '\n'); i >= 0 && i < len(t)/2 {
			t = t[i+1:]
		}
		for len(t) > 0 && !utf8.RuneStart(t[0]) {
			t = t[1:]
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(t), "\uFFFD"))
	if s == "" {
		return " (no output)"
	}
	if cut {
		s = "..." + s
	}
	return ": " + s
}

// removeAll removes the working directory dir. A program may have left
// directories it cannot be removed from (chmod 0500): those are made
// writable by their owner, and the removal is tried again.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		// d comes from Lstat: a symbolic link is never followed. The
		// program is dead by now, so it cannot swap a directory for a
		// link in between.
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
