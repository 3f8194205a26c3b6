package bash

import (
	"syscall"
	"unsafe"
)

// procAttr puts the process in a new session, so in a process group of its
// own that killGroup can kill, with no controlling terminal. It is killed if
// the thread that started it exits, which run prevents by locking the thread
// until the process has exited; a reaper gets SIGTERM instead, so as to kill
// what it reaps first.
func procAttr(reaper bool) *syscall.SysProcAttr {
	sig := syscall.SIGKILL
	if reaper {
		sig = syscall.SIGTERM
	}
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: sig}
}

// waitExited blocks until the process pid has exited, and leaves it
// unreaped (WNOWAIT): while it is a zombie, its pid, which is also its
// process group's id, cannot be reused, so the group can be killed safely
// after it exited. It reports false if it could not wait.
func waitExited(pid int) bool {
	const pPID = 1      // P_PID
	var info [16]uint64 // siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		return e == 0
	}
}
