//go:build unix

package bash

import "syscall"

// supported tells whether the handler can run programs on this system.
const supported = true

// killGroup kills the process group pgid.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// terminate sends SIGTERM to the process pid.
func terminate(pid int) {
	_ = syscall.Kill(pid, syscall.SIGTERM)
}
