//go:build !unix

package setup

import "os/exec"

// detach does nothing here: the server may see the Ctrl-C meant for the
// example, and the example then says it could not remove its subscription.
func detach(*exec.Cmd) {}
