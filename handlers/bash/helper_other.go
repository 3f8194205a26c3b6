//go:build !linux

package bash

import "os"

// helperSupported tells whether runs go through the helper: its limits and
// its sub-reaper are Linux's, so elsewhere a program runs without them.
const helperSupported = false

// statusPipe is Linux's: the reaper that writes on it is.
type statusPipe struct{}

func newStatusPipe() (*statusPipe, error)     { return nil, nil }
func (p *statusPipe) writer() *os.File        { return nil }
func (p *statusPipe) closeWriter()            {}
func (p *statusPipe) read() (e exit, ok bool) { return exit{}, false }
func (p *statusPipe) close()                  {}
