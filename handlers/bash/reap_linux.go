package bash

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// statusFD is the descriptor on which the reaper writes the program's wait
// status (exec.Cmd.ExtraFiles[0]).
const statusFD = 3

// reap runs the program, through the helper in exec mode that sets the
// limits, as a child of this process, which is its sub-reaper: whatever the
// program starts and leaves behind, even in a session of its own (setsid, a
// daemon's double fork), becomes a child of this process when its parent
// exits. When the program has exited, or at SIGTERM (the server's timeout or
// cancel), SIGINT or SIGHUP (the server's death, through Pdeathsig), it kills
// every process it is the parent of until none is left, writes the program's
// wait status on statusFD, and returns 0.
//
// A program can escape only by killing this process first, which it may do
// as it runs as the same user: the sandbox's pid namespace has no such gap.
func reap(spec, path string, argv []string) int {
	syscall.CloseOnExec(statusFD) // the program must not hold it
	// Pdeathsig below is the death of this thread, not of the process.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return helperFail("become a sub-reaper: %v", err)
	}
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	self := "/proc/self/exe"
	pid, err := syscall.ForkExec(self, append([]string{self, helperArg, helperExec, spec, path}, argv...), &syscall.ProcAttr{
		Env:   append(os.Environ(), helperMarkEnv+"="+helperArg),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return helperFail("start %s: %v", path, err)
	}
	var status unix.WaitStatus
	got := false
wait:
	for !got {
		select {
		case <-chld:
			got = reapExited(pid, &status)
		case <-stop:
			break wait
		}
	}
	if killAll(pid, &status) {
		got = true
	}
	if got {
		var b [4]byte
		binary.NativeEndian.PutUint32(b[:], uint32(status))
		_, _ = unix.Write(statusFD, b[:])
	}
	return 0
}

// reapExited reaps the children that have exited, and reports whether pid
// was one of them, setting status to its wait status.
func reapExited(pid int, status *unix.WaitStatus) bool {
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil || wpid <= 0:
			return false
		case wpid == pid:
			*status = ws
			return true
		}
	}
}

// killAll kills the children of this process with SIGKILL and reaps them,
// until there are none: each killed one hands its own children to this
// process. It reports whether pid was reaped, setting status to its wait
// status. A child cannot be reused by another process before this process
// reaps it, so it is the one killed.
func killAll(pid int, status *unix.WaitStatus) bool {
	got := false
	for {
		kids, err := children(os.Getpid())
		if err != nil {
			helperFail("find what the program left running: %v", err)
			return got
		}
		for _, k := range kids {
			_ = unix.Kill(k, unix.SIGKILL)
		}
		flags := unix.WNOHANG
		if len(kids) > 0 {
			flags = 0 // they are dying
		}
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, flags, nil)
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil: // ECHILD: none left
			return got
		case wpid == pid:
			*status, got = ws, true
		case wpid == 0:
			// A child the scan did not see yet.
			time.Sleep(time.Millisecond)
		}
	}
}

// children returns the processes whose parent is ppid.
func children(ppid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	want := []byte(strconv.Itoa(ppid))
	var kids []int
	for _, e := range entries {
		name := e.Name()
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone
		}
		// "pid (comm) state ppid ...", where comm may hold anything.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) > 1 && bytes.Equal(f[1], want) {
			kids = append(kids, pid)
		}
	}
	return kids, nil
}

// statusPipe carries the program's wait status from the reaper to the
// server. A nil *statusPipe carries nothing: every method but writer
// accepts one.
type statusPipe struct {
	r int      // the server's end, non-blocking
	w *os.File // the reaper's, as statusFD
}

// newStatusPipe returns a pipe for the reaper's status.
func newStatusPipe() (*statusPipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, err
	}
	return &statusPipe{r: fds[0], w: os.NewFile(uintptr(fds[1]), "status")}, nil
}

// writer returns the reaper's end, to pass as ExtraFiles[0]; p is not nil.
func (p *statusPipe) writer() *os.File { return p.w }

// closeWriter closes the reaper's end in the server, once the reaper has it.
func (p *statusPipe) closeWriter() {
	if p != nil && p.w != nil {
		p.w.Close()
		p.w = nil
	}
}

// read returns how the program ended, once the reaper has exited; ok is
// false when the reaper wrote nothing.
func (p *statusPipe) read() (e exit, ok bool) {
	if p == nil {
		return exit{}, false
	}
	var b [4]byte
	if n, err := unix.Read(p.r, b[:]); err != nil || n != len(b) {
		return exit{}, false
	}
	ws := syscall.WaitStatus(binary.NativeEndian.Uint32(b[:]))
	e = exit{exited: ws.Exited(), code: ws.ExitStatus()}
	switch {
	case ws.Exited():
		e.desc = "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		e.desc = "signal: " + ws.Signal().String()
		if ws.CoreDump() {
			e.desc += " (core dumped)"
		}
	default:
		e.desc = fmt.Sprintf("wait status %#x", uint32(ws))
	}
	return e, true
}

// close closes both ends.
func (p *statusPipe) close() {
	if p == nil {
		return
	}
	p.closeWriter()
	unix.Close(p.r)
}
