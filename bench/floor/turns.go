package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpe-server/mcpe-server/bench/internal/poster"
	"github.com/mcpe-server/mcpe-server/bench/internal/proc"
	"github.com/mcpe-server/mcpe-server/bench/internal/workload"
)

// The turns floor asks what servers sharing one principal's commits cost
// before any work of their own: ingest servers (as the ingest floor's) that
// answer each event once a commit carrying it is done, the commits of each
// server grouped as mcpe-server's are (one leader commits what waits, the
// rest wait for it), against a lock process that stands for the database
// holding the principal's row for -hold per commit. How the lock takes
// commits:
//
//   - turns: one at a time, each with what waited when it was asked for (a
//     publish that takes the principal's row as it commits);
//   - gather: one at a time, each server told first that its turn came,
//     then sending what waits by then (mcpe-server's gathering);
//   - apart: every server's at once (commits that do not take turns).
//
// The lock is a process of its own, as the database is, and its CPU is not
// counted.

// The lock's protocol, a byte each way on one connection per server.
const (
	lockAsk     = 'a' // server: a commit, with its batch (turns, apart) or not yet (gather)
	lockGranted = 'g' // lock (gather): the turn came
	lockBatch   = 'b' // server (gather): the batch
	lockDone    = 'd' // lock: committed
)

// commitModes are the ways the lock takes commits (above).
var commitModes = []string{"turns", "gather", "apart"}

// serveLock is the turns floor's lock: it prints its address and serves
// until its standard input closes.
func serveLock(mode string, hold time.Duration) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	fmt.Println(ln.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	turn := make(chan chan struct{}) // one commit at a time (turns, gather)
	go func() {
		for done := range turn {
			<-done
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			fail(err)
		}
		go func() {
			defer c.Close()
			b := make([]byte, 1)
			for {
				if _, err := io.ReadFull(c, b); err != nil || b[0] != lockAsk {
					return
				}
				if !commitAt(c, mode, hold, turn) {
					return
				}
			}
		}()
	}
}

// commitAt holds one commit of connection c for hold, in turn unless
// mode is apart, and tells whether c may go on.
func commitAt(c net.Conn, mode string, hold time.Duration, turn chan<- chan struct{}) bool {
	done := make(chan struct{})
	defer close(done)
	if mode != "apart" {
		turn <- done
	}
	if mode == "gather" {
		b := []byte{lockGranted}
		if _, err := c.Write(b); err != nil {
			return false
		}
		if _, err := io.ReadFull(c, b); err != nil || b[0] != lockBatch {
			return false
		}
	}
	time.Sleep(hold)
	_, err := c.Write([]byte{lockDone})
	return err == nil
}

// committer groups a server's commits: the first event to wait leads, and
// commits what waits until nothing does.
type committer struct {
	conn   net.Conn
	gather bool
	mu     sync.Mutex
	wait   []chan error
	busy   bool
	// commits and events count what was committed.
	commits, events atomic.Int64
}

// commit returns once a commit carrying the caller's event is done.
func (c *committer) commit() error {
	done := make(chan error, 1)
	c.mu.Lock()
	c.wait = append(c.wait, done)
	lead := !c.busy
	c.busy = true
	c.mu.Unlock()
	if lead {
		c.lead()
	}
	return <-done
}

// lead commits what waits, one commit after another, until nothing does
// (or the lock fails, which fails every event waiting).
func (c *committer) lead() {
	b := make([]byte, 1)
	for {
		var err error
		var batch []chan error
		if !c.gather {
			batch = c.take()
		}
		if _, err = c.conn.Write([]byte{lockAsk}); err == nil && c.gather {
			if err = c.read(b, lockGranted); err == nil {
				batch = c.take()
				_, err = c.conn.Write([]byte{lockBatch})
			}
		}
		if err == nil {
			err = c.read(b, lockDone)
		}
		c.commits.Add(1)
		c.events.Add(int64(len(batch)))
		for _, w := range batch {
			w <- err
		}
		c.mu.Lock()
		if len(c.wait) == 0 || err != nil {
			for _, w := range c.wait {
				w <- err
			}
			c.wait, c.busy = nil, false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// take returns the events waiting, which the commit under way carries.
func (c *committer) take() []chan error {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.wait
	c.wait = nil
	return w
}

// read reads the lock's next byte into b, which must be want.
func (c *committer) read(b []byte, want byte) error {
	if _, err := io.ReadFull(c.conn, b); err != nil {
		return err
	} else if b[0] != want {
		return fmt.Errorf("the lock sent %q, not %q", b[0], want)
	}
	return nil
}

// Turns is the turns floor's line.
type Turns struct {
	Floor          string  `json:"floor"`
	Commits        string  `json:"commits"`
	HoldMicros     int64   `json:"holdMicros"`
	Servers        int     `json:"servers"`
	Posters        int     `json:"posters"`
	Events         int     `json:"events"`
	Seconds        float64 `json:"seconds"`
	PerSecond      float64 `json:"acceptedPerSecond"`
	ServerCPUMicro float64 `json:"serverCPUMicrosPerEvent"`
	PerCommit      float64 `json:"eventsPerCommit"`
}

// turns posts events from posters keep-alive connections spread over
// servers ingest servers run from self, committing at a lock that takes
// commits as mode says.
func turns(self, mode string, hold time.Duration, servers, posters, events int) (*Turns, error) {
	var procs []*child
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	lock, err := start(self, "--lock", mode, hold.String())
	if err != nil {
		return nil, err
	}
	procs = append(procs, lock)
	var bases []string
	var serverPIDs []int
	for range servers {
		s, err := start(self, "--ingest", lock.first, fmt.Sprint(mode == "gather"))
		if err != nil {
			return nil, err
		}
		procs = append(procs, s)
		bases, serverPIDs = append(bases, s.first), append(serverPIDs, s.cmd.Process.Pid)
	}
	cpu := func() (t time.Duration) {
		for _, pid := range serverPIDs {
			t += proc.CPUTime(pid)
		}
		return t
	}
	server0 := cpu()
	elapsed, err := post(bases, posters, events)
	if err != nil {
		return nil, err
	}
	used := cpu() - server0
	var commits, committed int64
	for _, s := range procs[1:] {
		var c, e int64
		s.stop()
		if _, err := fmt.Sscan(s.last, &c, &e); err != nil {
			return nil, fmt.Errorf("a server's counts: %q", s.last)
		}
		commits, committed = commits+c, committed+e
	}
	if committed != int64(events) {
		return nil, fmt.Errorf("%d events answered, %d committed", events, committed)
	}
	return &Turns{
		Floor: "turns", Commits: mode, HoldMicros: hold.Microseconds(), Servers: servers, Posters: posters,
		Events: events, Seconds: elapsed.Seconds(), PerSecond: float64(events) / elapsed.Seconds(),
		ServerCPUMicro: float64(used.Microseconds()) / float64(events),
		PerCommit:      float64(committed) / float64(max(commits, 1)),
	}, nil
}

// child is a process this program runs again: first is the line it printed
// first (its address), last the one it printed last (once stopped).
type child struct {
	cmd         *exec.Cmd
	stdin       io.Closer
	out         *bufio.Scanner
	first, last string
	stopped     bool
}

func start(self string, args ...string) (*child, error) {
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	if !c.out.Scan() {
		c.stop()
		return nil, fmt.Errorf("%s %s gave no address", self, args[0])
	}
	c.first = strings.TrimSpace(c.out.Text())
	return c, nil
}

// stop closes the child's standard input, reads the rest of what it prints
// and waits for it.
func (c *child) stop() {
	if c.stopped {
		return
	}
	c.stopped = true
	c.stdin.Close()
	for c.out.Scan() {
		c.last = strings.TrimSpace(c.out.Text())
	}
	c.cmd.Wait()
}

// post posts events from posters keep-alive connections, spread over bases
// in turn, and returns how long it took.
func post(bases []string, posters, events int) (time.Duration, error) {
	var next, refused atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for i := range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &poster.Poster{Base: bases[i%len(bases)]}
			defer p.Close()
			var body []byte
			for {
				e := int(next.Add(1)) - 1
				if e >= events {
					return
				}
				body = workload.AppendEvent(body[:0], e)
				status, _, err := p.Post(body)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if status != http.StatusAccepted {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return 0, err
	}
	if n := refused.Load(); n > 0 {
		return 0, fmt.Errorf("%d events refused", n)
	}
	return time.Since(start), nil
}
