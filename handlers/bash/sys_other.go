//go:build !unix

package bash

import (
	"os"
	"syscall"
)

// supported tells whether the handler can run programs on this system: it
// needs process groups, which only Unix systems have.
const supported = false

func procAttr(bool) *syscall.SysProcAttr { return nil }

func terminate(pid int) { killGroup(pid) }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func waitExited(int) bool { return false }
