//go:build unix && !linux

package bash

import "syscall"

// supported tells whether the handler can run programs on this system.
const supported = true

// procAttr puts the program in a new session, so in a process group of its
// own that killGroup can kill, with no controlling terminal.
func procAttr(bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// killGroup kills the process group pgid.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// terminate sends SIGTERM to the process pid.
func terminate(pid int) {
	_ = syscall.Kill(pid, syscall.SIGTERM)
}

// waitExited reports false: this system has no portable wait that leaves
// the process unreaped, so run reaps it first and kills what is left of its
// group after.
func waitExited(int) bool { return false }
