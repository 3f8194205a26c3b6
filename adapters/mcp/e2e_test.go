package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// controlEnv names the loopback address a controlled stdio upstream dials
// to take its orders.
const controlEnv = "MCP_ADAPTER_TEST_CONTROL"

// controlled is an upstream MCP server that a test drives: it changes its
// tool list, updates its resource, logs and sends its own events on
// command.
type controlled struct {
	server *mcp.Server
	// id tells this server's events from those of others in the same
	// process: each has its own source IDs.
	id int64

	mu    sync.Mutex
	tools int
	sent  int
}

// servers counts the controlled servers of this process.
var servers atomic.Int64

func newControlled() *controlled {
	c := &controlled{id: servers.Add(1)}
	c.server = mcp.NewServer(&mcp.Implementation{Name: "controlled", Version: "1.0.0"}, &mcp.ServerOptions{
		// Accepting subscriptions is enough: the SDK keeps track of them.
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	c.server.AddResource(&mcp.Resource{URI: docURI, Name: "doc", MIMEType: "text/plain"}, readDoc)
	c.server.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	mcp.AddTool(c.server, &mcp.Tool{Name: "echo"}, echo)
	return c
}

// do carries out one order: "tool" adds a tool, "resource" updates
// docURI, "log" logs an error on every session, "event" sends an
// events/event on one session.
func (c *controlled) do(order string) error {
	ctx := context.Background()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch order {
	case "tool":
		c.tools++
		mcp.AddTool(c.server, &mcp.Tool{Name: fmt.Sprintf("tool-%d", c.tools)}, echo)
	case "resource":
		return c.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: docURI})
	case "log":
		n := 0
		for ss := range c.server.Sessions() {
			n++
			if err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Logger: "db", Data: map[string]any{"msg": "disk full"}}); err != nil {
				return err
			}
		}
		if n == 0 {
			return fmt.Errorf("no session to log on")
		}
	case "event":
		for ss := range c.server.Sessions() {
			sink, err := mcpserver.SessionSink(ss)
			if err != nil {
				return err
			}
			c.sent++
			params := fmt.Sprintf(`{"subscriptionId":"s","event":{"id":"build-%d-%d-%d","type":"build.finished","data":{"pid":%d},"metadata":{"priority":"high"}}}`, os.Getpid(), c.id, c.sent, os.Getpid())
			return sink.Notify(ctx, mcpe.MethodEvent, json.RawMessage(params))
		}
		return fmt.Errorf("no session to send the event on")
	default:
		return fmt.Errorf("unknown order %q", order)
	}
	return nil
}

// runControlledUpstream is the test binary re-executed as a controlled
// stdio upstream: it serves MCP on stdin and stdout, says hello with its
// process ID on the control connection, and carries out the orders read
// from it, answering each with "ok" or "error ...".
func runControlledUpstream() {
	c := newControlled()
	ss, err := c.server.Connect(context.Background(), &mcp.StdioTransport{}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	conn, err := net.Dial("tcp", os.Getenv(controlEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "control:", err)
		os.Exit(1)
	}
	fmt.Fprintf(conn, "hello %d\n", os.Getpid())
	go func() {
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			if err := c.do(sc.Text()); err != nil {
				fmt.Fprintf(conn, "error %v\n", err)
				continue
			}
			fmt.Fprintln(conn, "ok")
		}
	}()
	ss.Wait()
}

// control accepts the control connections of controlled stdio upstreams.
type control struct {
	ln    net.Listener
	conns chan net.Conn
}

func newControl(t *testing.T) *control {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &control{ln: ln, conns: make(chan net.Conn, 4)}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.conns <- conn
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return c
}

// child is the control connection of one controlled stdio upstream.
type child struct {
	pid  int
	conn net.Conn
	r    *bufio.Reader
}

// next waits for the next upstream process to call in.
func (c *control) next(t *testing.T) *child {
	t.Helper()
	select {
	case conn := <-c.conns:
		t.Cleanup(func() { conn.Close() })
		conn.SetDeadline(time.Now().Add(waitLimit))
		r := bufio.NewReader(conn)
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read hello: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "hello "))
		if err != nil {
			t.Fatalf("hello %q: %v", line, err)
		}
		return &child{pid: pid, conn: conn, r: r}
	case <-time.After(waitLimit):
		t.Fatalf("no upstream process called in within %v", waitLimit)
		return nil
	}
}

func (ch *child) do(t *testing.T, order string) {
	t.Helper()
	fmt.Fprintln(ch.conn, order)
	line, err := ch.r.ReadString('\n')
	if err != nil {
		t.Fatalf("order %s: %v", order, err)
	}
	if line = strings.TrimSpace(line); line != "ok" {
		t.Fatalf("order %s: %s", order, line)
	}
}

// newService returns a started Service on a SQLite store, with sub
// subscribed (as principal "agent") to pattern. It has a clock of its own:
// the adapter's fake clock then holds only the retry timers.
func newService(t *testing.T, sub *adaptertest.Subscriber, pattern string) *subscriptions.Service {
	t.Helper()
	return adaptertest.NewService(t, clocktest.NewFake(t0), sub, "agent", mcpe.Filter{EventTypes: []string{pattern}})
}

// checkFlow has the upstream change its tool list, update its resource,
// log and send an event, and checks that each reaches the subscriber;
// round counts the connections so far. withLog is false for an upstream
// that cannot log outside a request.
func checkFlow(t *testing.T, sub *adaptertest.Subscriber, name string, round int, do func(string), withLog bool) {
	t.Helper()
	p := "mcp." + name + "."
	do("tool")
	sub.Wait(t, p+"tools.list_changed", round)
	do("resource")
	if ev := sub.Wait(t, p+"resources.updated", round)[round-1]; !strings.Contains(string(ev.Data), docURI) {
		t.Errorf("resources.updated data %s lacks the URI %s", ev.Data, docURI)
	}
	if withLog {
		do("log")
		ev := sub.Wait(t, p+"log", round)[round-1]
		var data logData
		if err := json.Unmarshal(ev.Data, &data); err != nil || data.Level != "error" || data.Logger != "db" || ev.Metadata.Priority != mcpe.PriorityHigh {
			t.Errorf("log event %s (priority %s): want level error, logger db, priority high (%v)", ev.Data, ev.Metadata.Priority, err)
		}
	}
	do("event")
	ev := sub.Wait(t, p+"build.finished", round)[round-1]
	if ev.Metadata.Priority != mcpe.PriorityHigh || !strings.HasPrefix(ev.Metadata.SourceEventID, name+":build-") {
		t.Errorf("re-published event metadata %+v; want priority high, sourceEventId %s:build-...", ev.Metadata, name)
	}
}

// waitRetrying waits for the upstream to be retrying and returns when it
// tries again.
func waitRetrying(t *testing.T, a *Adapter, fake *clocktest.Fake) time.Time {
	t.Helper()
	var due time.Time
	eventually(t, "the upstream to be retrying, with a retry timer", func() bool {
		var ok bool
		due, ok = fake.NextDue()
		return ok && state(t, a).Status == StatusRetrying
	})
	if st := state(t, a); st.LastError == "" || st.NextAttempt == "" {
		t.Errorf("retrying state %+v lacks lastError or nextAttempt", st)
	}
	return due
}

// The end-to-end test the issue asks for, with a stdio upstream (this test
// binary, re-executed) on both protocol versions: what the upstream
// announces reaches a subscriber through a real Service and SQLite store;
// the upstream is killed, the state turns to retrying, the adapter starts
// it again once the backoff is over, and events flow again.
func TestEndToEndStdio(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			sub := &adaptertest.Subscriber{}
			svc := newService(t, sub, "mcp.child.*")
			ctl := newControl(t)
			fake := clocktest.NewFake(t0)
			a := newAdapter(t, svc, fake, Upstream{
				Name:    "child",
				Command: []string{os.Args[0], "-test.run=^$"},
				// GORACE: a race-enabled child would otherwise wait 1s before it exits.
				Env: map[string]string{childEnv: childControlled, controlEnv: ctl.ln.Addr().String(), "GORACE": "atexit_sleep_ms=0"},
			})
			a.upstreams[0].protocol = version
			start(t, a)

			first := ctl.next(t)
			ev := sub.Wait(t, "mcp.child.connected", 1)[0]
			if !strings.Contains(string(ev.Data), `"protocolVersion":"`+version+`"`) {
				t.Errorf("connected data %s; want protocolVersion %s", ev.Data, version)
			}
			checkFlow(t, sub, "child", 1, func(o string) { first.do(t, o) }, true)

			if err := syscall.Kill(first.pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			due := waitRetrying(t, a, fake)
			sub.Wait(t, "mcp.child.disconnected", 1)

			fake.AdvanceTo(due)
			second := ctl.next(t)
			if second.pid == first.pid {
				t.Fatalf("the restarted upstream has the killed one's pid %d", first.pid)
			}
			sub.Wait(t, "mcp.child.connected", 2)
			if st := state(t, a); st.Status != StatusConnected {
				t.Errorf("state after the restart = %+v; want connected", st)
			}
			checkFlow(t, sub, "child", 2, func(o string) { second.do(t, o) }, true)

			// The same deliveries wait in the agent's inbox for events_poll.
			res, err := svc.Poll(context.Background(), "agent", mcpe.PollRequest{Limit: mcpe.MaxPollLimit})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(sub.Types()); len(res.Items) != n {
				t.Errorf("events_poll returns %d items; %d were delivered", len(res.Items), n)
			}
		})
	}
}

// The same with a Streamable HTTP upstream, stateful (it takes protocol
// 2025-11-25 and has a standalone stream) and stateless (2026-07-28, whose
// list changes and resource updates come over subscriptions/listen; it
// keeps no log level, so it cannot log outside a request). The upstream is
// shut down and started again on the same address.
func TestEndToEndHTTP(t *testing.T) {
	for _, mode := range httpModes {
		t.Run(mode.name, func(t *testing.T) {
			sub := &adaptertest.Subscriber{}
			svc := newService(t, sub, "mcp.web.*")
			serve := func(ln net.Listener) (*controlled, *httptest.Server) {
				c := newControlled()
				h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return c.server }, &mcp.StreamableHTTPOptions{Stateless: mode.stateless})
				srv := httptest.NewUnstartedServer(h)
				if ln != nil {
					srv.Listener.Close()
					srv.Listener = ln
				}
				srv.Start()
				t.Cleanup(func() {
					// The adapter's streams stay open until it stops,
					// which comes later: break them first.
					srv.CloseClientConnections()
					srv.Close()
				})
				return c, srv
			}
			first, srv := serve(nil)
			fake := clocktest.NewFake(t0)
			a := startAdapter(t, svc, fake, Upstream{Name: "web", URL: srv.URL})
			ev := sub.Wait(t, "mcp.web.connected", 1)[0]
			if !strings.Contains(string(ev.Data), `"protocolVersion":"`+mode.version+`"`) {
				t.Errorf("connected data %s; want protocolVersion %s", ev.Data, mode.version)
			}
			do := func(c *controlled) func(string) {
				return func(order string) {
					if err := c.do(order); err != nil {
						t.Fatalf("order %s: %v", order, err)
					}
				}
			}
			checkFlow(t, sub, "web", 1, do(first), !mode.stateless)

			// Shut the upstream down: its connections break.
			addr := srv.Listener.Addr().String()
			srv.CloseClientConnections()
			srv.Close()
			due := waitRetrying(t, a, fake)
			sub.Wait(t, "mcp.web.disconnected", 1)

			second, _ := serve(listenAgain(t, addr))
			fake.AdvanceTo(due)
			sub.Wait(t, "mcp.web.connected", 2)
			checkFlow(t, sub, "web", 2, do(second), !mode.stateless)
		})
	}
}
