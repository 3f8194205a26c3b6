package client

// This file takes MCPE notifications out of a newline-delimited JSON-RPC
// stream (stdio, a subprocess, any io.Reader) before the go-sdk reads it.
// The SDK decodes each message it reads with a decoder that allocates a
// 32 KiB buffer per message (go-sdk v1.8 internal/json.Unmarshal); at the
// rates events arrive that is the most of a client's time, and it caps a
// go-sdk client near 20 000 notifications/s on a machine where the same
// bytes decode at more than 80 000/s. Filtered here, the notifications cost
// one decode each (eventsNotification: the SDK's decoder without its
// buffer, ~0.4 µs for a typical events/event in BenchmarkLineFilter), and
// the SDK sees only its own messages, which reach it through
// internal/stdio's transport (each decoded once, as the server's stdio
// sessions are) rather than the SDK's.

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/internal/stdio"
)

// lineFilter reads newline-delimited JSON-RPC from src, hands the MCPE
// notifications to h, and returns the other lines unchanged.
type lineFilter struct {
	src     io.ReadCloser
	r       *bufio.Reader
	h       TapHandler
	maxLine int    // zero means maxSSELine; tests set less
	line    []byte // the line being read
	skip    bool   // inside an over-long line: it passes as read
	pending []byte // what is left of a line to return
	err     error
}

func newLineFilter(src io.ReadCloser, h TapHandler) *lineFilter {
	return &lineFilter{src: src, r: bufio.NewReaderSize(src, 64<<10), h: h}
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		f.next()
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// next reads up to the end of a line, or a buffer of it, and sets what
// Read returns.
func (f *lineFilter) next() {
	chunk, err := f.r.ReadSlice('\n')
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
		f.err = err
	}
	complete := err == nil
	if f.skip {
		// The rest of an over-long line passes as read.
		f.pending = append(f.pending[:0], chunk...)
		f.skip = !complete
		return
	}
	f.line = append(f.line, chunk...)
	if len(f.line) > cmp.Or(f.maxLine, maxSSELine) {
		// Too long to inspect: it passes.
		f.pending = append(f.pending[:0], f.line...)
		f.line, f.skip = f.line[:0], !complete
		return
	}
	if !complete && f.err == nil {
		return
	}
	if params, method, ok := eventsNotification(f.line); ok {
		f.h(method, params)
	} else {
		f.pending = append(f.pending[:0], f.line...)
	}
	f.line = f.line[:0]
}

func (f *lineFilter) Close() error { return f.src.Close() }

// commandTap starts a command as CommandTransport does, reads its output
// through a lineFilter, and stops it as CommandTransport does.
type commandTap struct {
	t *mcp.CommandTransport
	h TapHandler
}

// defaultTerminate is how long Close waits for the process to exit after
// closing its input, and again after SIGTERM, as the go-sdk does.
const defaultTerminate = 5 * time.Second

func (c *commandTap) Connect(ctx context.Context) (mcp.Connection, error) {
	cmd := c.t.Command
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	td := c.t.TerminateDuration
	if td <= 0 {
		td = defaultTerminate
	}
	// The connection is closed by closing the process's input, not its
	// output.
	r := newLineFilter(io.NopCloser(stdout), c.h)
	tr := stdio.NewTransport(r, &processInput{WriteCloser: stdin, cmd: cmd, terminate: td}, 0)
	return (&filterTransport{Transport: tr, handler: c.h}).Connect(ctx)
}

// processInput is a subprocess's standard input. Closing it ends the
// process as the MCP specification asks of a stdio client: input closed,
// then SIGTERM, then SIGKILL, waiting a while before each.
type processInput struct {
	io.WriteCloser
	cmd       *exec.Cmd
	terminate time.Duration
	once      sync.Once
	err       error
}

func (p *processInput) Close() error {
	p.once.Do(func() { p.err = p.stop() })
	return p.err
}

func (p *processInput) stop() error {
	if err := p.WriteCloser.Close(); err != nil {
		return fmt.Errorf("closing stdin: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(p.terminate):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if p.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("unresponsive subprocess")
}
