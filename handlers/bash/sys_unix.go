//go:build unix && !linux

package bash

import "syscall"

// procAttr puts the program in a new session, so in a process group of its
// own that killGroup can kill, with no controlling terminal.
func procAttr(bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// waitExited reports false: this system has no portable wait that leaves
// the process unreaped, so run reaps it first and kills what is left of its
// group after.
func waitExited(int) bool { return false }
