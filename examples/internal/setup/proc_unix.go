//go:build unix

package setup

import (
	"os/exec"
	"syscall"
)

// detach puts a started server in a process group of its own, so that the
// Ctrl-C meant for the example does not stop the server before the example
// is done with it; the server exits when the example closes its stdin.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
