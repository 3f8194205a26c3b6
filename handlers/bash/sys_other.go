//go:build !unix

package bash

import "syscall"

// supported tells whether the handler can run programs on this system: it
// needs process groups, which only Unix systems have. New fails without
// them, so no run calls the functions below.
const supported = false

func procAttr(bool) *syscall.SysProcAttr { return nil }
func terminate(int)                      {}
func killGroup(int)                      {}
func waitExited(int) bool                { return false }
