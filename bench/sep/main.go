// Command sep measures the SEP-3415 events extension of the built
// mcpe-server through the project's Go client over stdio, and prints one
// JSON line per measurement:
//
//   - streams: events per second through events/stream to one client with
//     -streams streams open (each event matches one stream), and the
//     server's CPU per event;
//
//   - idle: the server's memory per open stream with -idle idle streams, and
//     its CPU per second while they get heartbeats (every -heartbeat);
//
//   - poll: events/poll round trips per second, -polls in a row.
//
//     go build -o /tmp/mcpe-server ./cmd/mcpe-server
//     go run ./bench/sep -bin /tmp/mcpe-server
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/bench/internal/proc"
	"github.com/mcpe-server/mcpe-server/client"
)

func main() {
	bin := flag.String("bin", "", "the mcpe-server binary to measure (required)")
	streams := flag.Int("streams", 1000, "streams open for the throughput measurement")
	events := flag.Int("events", 20000, "events posted for the throughput measurement")
	idle := flag.Int("idle", 10000, "idle streams for the memory measurement")
	heartbeat := flag.Duration("heartbeat", 10*time.Second, "the server's subscriptions.heartbeatInterval")
	polls := flag.Int("polls", 10000, "events/poll calls in a row")
	only := flag.String("only", "", "run only the measurement of that name: streams, idle or poll")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "sep: -bin is required")
		os.Exit(2)
	}
	for _, m := range []struct {
		name string
		run  func(*server) (map[string]any, error)
	}{
		{"streams", func(s *server) (map[string]any, error) { return measureStreams(s, *streams, *events) }},
		{"idle", func(s *server) (map[string]any, error) { return measureIdle(s, *idle, *heartbeat) }},
		{"poll", func(s *server) (map[string]any, error) { return measurePoll(s, *polls) }},
	} {
		if *only != "" && *only != m.name {
			continue
		}
		s, err := start(*bin, *heartbeat)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sep:", err)
			os.Exit(1)
		}
		res, err := m.run(s)
		s.stop()
		if err != nil {
			fmt.Fprintf(os.Stderr, "sep: %s: %v\n", m.name, err)
			os.Exit(1)
		}
		res["measurement"], res["binary"] = m.name, *bin
		out, _ := json.Marshal(res)
		fmt.Println(string(out))
	}
}

// server is the binary, serving stdio (to the client) and HTTP (ingest).
type server struct {
	dir  string
	cmd  *exec.Cmd
	base string
	c    *client.Client
}

var listenLine = regexp.MustCompile(`msg="HTTP server listening" addr=(\S+)`)

func start(bin string, heartbeat time.Duration) (*server, error) {
	dir, err := os.MkdirTemp("", "mcpe-sep")
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "config.yaml")
	body := fmt.Sprintf("subscriptions:\n  maxPerPrincipal: 20000\n  heartbeatInterval: %s\n", heartbeat)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return nil, err
	}
	s := &server{dir: dir}
	s.cmd = exec.Command(bin, "--stdio", "--http", "127.0.0.1:0", "--db", filepath.Join(dir, "mcpe.db"), "--config", cfg)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	if s.c, err = client.New(&client.Options{}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.c.Connect(ctx, &mcp.CommandTransport{Command: s.cmd}); err != nil {
		return nil, err
	}
	select {
	case a := <-addr:
		s.base = "http://" + a
	case <-ctx.Done():
		return nil, errors.New("the server did not say where it listens")
	}
	return s, nil
}

func (s *server) stop() {
	s.c.Close()
	if s.cmd.Process != nil {
		s.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
		}
	}
	os.RemoveAll(s.dir)
}

// openStreams opens n streams, stream i on the events of type s<i>.*, and
// returns once each is active; handled counts the events they handle.
func (s *server) openStreams(ctx context.Context, n int, handled *atomic.Int64, heartbeat time.Duration) (*sync.WaitGroup, error) {
	var wg sync.WaitGroup
	active := make(chan struct{}, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := json.RawMessage(fmt.Sprintf(`{"eventTypes":["s%d.*"]}`, i))
			first := true
			s.c.RunStream(ctx, client.StreamLoop{
				Request:   client.EventsStreamRequest{Name: "mcpe.filter", Arguments: args},
				Heartbeat: heartbeat,
				OnEvent: func(context.Context, client.Occurrence) error {
					handled.Add(1)
					return nil
				},
				OnCursor: func(context.Context, string, bool) error {
					if first {
						first = false
						active <- struct{}{}
					}
					return nil
				},
			})
		}()
	}
	deadline := time.After(10 * time.Minute)
	for i := range n {
		select {
		case <-active:
		case <-deadline:
			return &wg, fmt.Errorf("%d of %d streams active after 10 minutes", i, n)
		}
	}
	return &wg, nil
}

func measureStreams(s *server, streams, events int) (map[string]any, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var handled atomic.Int64
	t0 := time.Now()
	wg, err := s.openStreams(ctx, streams, &handled, 0)
	if err != nil {
		return nil, err
	}
	opened := time.Since(t0)
	cpu0, t1 := proc.CPUTime(s.cmd.Process.Pid), time.Now()
	if err := post(s.base, events, streams); err != nil {
		return nil, err
	}
	posted := time.Since(t1)
	for deadline := time.Now().Add(2 * time.Minute); handled.Load() < int64(events) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	span := time.Since(t1)
	cpu := proc.CPUTime(s.cmd.Process.Pid) - cpu0
	cancel()
	wg.Wait()
	return map[string]any{
		"streams": streams, "events": events, "handled": handled.Load(),
		"openSeconds": opened.Seconds(), "postSeconds": posted.Seconds(),
		"eventsPerSecond":         float64(handled.Load()) / span.Seconds(),
		"serverCPUMicrosPerEvent": cpu.Seconds() * 1e6 / float64(events),
		"rssMB":                   proc.RSS(s.cmd.Process.Pid),
	}, nil
}

func measureIdle(s *server, n int, heartbeat time.Duration) (map[string]any, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := proc.RSS(s.cmd.Process.Pid)
	var handled atomic.Int64
	wg, err := s.openStreams(ctx, n, &handled, heartbeat)
	if err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second)
	after := proc.RSS(s.cmd.Process.Pid)
	// Three heartbeats of every stream.
	window := 3 * heartbeat
	cpu0 := proc.CPUTime(s.cmd.Process.Pid)
	time.Sleep(window)
	cpu := proc.CPUTime(s.cmd.Process.Pid) - cpu0
	cancel()
	wg.Wait()
	return map[string]any{
		"streams": n, "heartbeatSeconds": heartbeat.Seconds(),
		"rssBeforeMB": before, "rssAfterMB": after,
		"kibPerStream":            (after - before) * 1024 / float64(n),
		"serverCPUPercent":        100 * cpu.Seconds() / window.Seconds(),
		"serverCPUMicrosPerBeat":  cpu.Seconds() * 1e6 / (float64(n) * 3),
		"eventsDuringIdleWindows": handled.Load(),
	}, nil
}

func measurePoll(s *server, n int) (map[string]any, error) {
	ctx := context.Background()
	req := client.EventsPollRequest{Name: "mcpe.filter", Arguments: json.RawMessage(`{"eventTypes":["poll.*"]}`)}
	res, err := s.c.PollEvents(ctx, req)
	if err != nil {
		return nil, err
	}
	cursor := res.Cursor
	cpu0, t0 := proc.CPUTime(s.cmd.Process.Pid), time.Now()
	for range n {
		req.Cursor = &cursor
		if res, err = s.c.PollEvents(ctx, req); err != nil {
			return nil, err
		}
		cursor = res.Cursor
	}
	d := time.Since(t0)
	cpu := proc.CPUTime(s.cmd.Process.Pid) - cpu0
	return map[string]any{
		"polls": n, "seconds": d.Seconds(), "roundTripsPerSecond": float64(n) / d.Seconds(),
		"serverCPUMicrosPerPoll": cpu.Seconds() * 1e6 / float64(n),
	}, nil
}

// post sends events of types s<e mod streams>.created from 16 posters.
func post(base string, events, streams int) error {
	var next atomic.Int64
	var firstErr atomic.Value
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				e := int(next.Add(1)) - 1
				if e >= events {
					return
				}
				body := fmt.Sprintf(`{"type":"s%d.created","data":{"seq":%d}}`, e%streams, e)
				resp, err := hc.Post(base+"/v1/events", "application/json", bytes.NewReader([]byte(body)))
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					firstErr.CompareAndSwap(nil, fmt.Errorf("POST: %s", resp.Status))
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return err
	}
	return nil
}
