// Package exampletest runs an example's run function in process, against a
// server the test controls, and waits for lines of its output.
package exampletest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/client/clienttest"
)

// Wait bounds every wait.
const Wait = 10 * time.Second

// RunFunc is an example's main, minus the process: it runs until ctx ends.
type RunFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// StartServer starts an in-process server with opts (nil for the
// defaults) and closes it when the test ends.
func StartServer(t *testing.T, opts *clienttest.Options) *clienttest.Server {
	t.Helper()
	s, err := clienttest.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Process is a running example.
type Process struct {
	Stdout, Stderr *Lines
	cancel         context.CancelFunc
	done           chan error
}

// Start runs run with args until Stop or the end of the test.
func Start(t *testing.T, run RunFunc, args ...string) *Process {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &Process{Stdout: newLines(), Stderr: newLines(), cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- run(ctx, args, p.Stdout, p.Stderr) }()
	t.Cleanup(func() {
		p.cancel()
		select {
		case <-p.done:
		case <-time.After(Wait):
			t.Error("the example did not stop")
		}
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", p.Stdout, p.Stderr)
		}
	})
	return p
}

// Stop ends the example as Ctrl-C would and returns what run returned.
func (p *Process) Stop(t *testing.T) error {
	t.Helper()
	p.cancel()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		return err
	case <-time.After(Wait):
		t.Fatal("the example did not stop")
		return nil
	}
}

// Done returns what run returned, failing if it does not return in time.
func (p *Process) Done(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(Wait):
		t.Fatal("the example did not return")
		return nil
	}
}

// Lines is an io.Writer that keeps what is written, line by line.
type Lines struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	lines   []string
	next    int // the first line WaitFor has not returned
	changed chan struct{}
}

func newLines() *Lines { return &Lines{changed: make(chan struct{})} }

func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		i := bytes.IndexByte(l.buf.Bytes(), '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.buf.Next(i + 1)[:i]))
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

// WaitFor returns the next line that contains substr, skipping those
// before it, failing after Wait.
func (l *Lines) WaitFor(t *testing.T, substr string) string {
	t.Helper()
	deadline := time.After(Wait)
	for {
		l.mu.Lock()
		for i := l.next; i < len(l.lines); i++ {
			if strings.Contains(l.lines[i], substr) {
				l.next = i + 1
				line := l.lines[i]
				l.mu.Unlock()
				return line
			}
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no line with %q within %v", substr, Wait)
			return ""
		}
	}
}

// Next returns the next line not yet returned, failing after Wait.
func (l *Lines) Next(t *testing.T) string {
	t.Helper()
	return l.WaitFor(t, "")
}

// Rest returns the lines not yet returned, without waiting.
func (l *Lines) Rest() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	rest := append([]string(nil), l.lines[l.next:]...)
	l.next = len(l.lines)
	return rest
}

func (l *Lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n") + l.buf.String()
}
