package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/client/clienttest"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// wait bounds every wait of these tests.
const wait = 10 * time.Second

// start is the fake clock's start: 08:00 in New York.
var start = time.Date(2026, 3, 2, 13, 0, 0, 0, time.UTC)

const (
	token     = "alice-token"
	principal = "alice"
)

// link is one way of reaching a server: a transport, the protocol asked
// for, and how to publish and move time on that server.
type link struct {
	name string
	// protocol is the version asked for; negotiated is the one the server
	// settles on.
	protocol, negotiated string
	// transport returns a fresh transport acting for one principal.
	transport func(ctx context.Context) (mcp.Transport, error)
	publish   func(t *testing.T, typ, data string) string
	// fake is the server's fake clock; nil for the real one (stdio).
	fake *clocktest.Fake
	// kill ends the server side of every live session abruptly.
	kill func(t *testing.T)
	// server is the in-process server; nil for stdio.
	server *clienttest.Server
}

// now is the server's time.
func (l link) now() time.Time {
	if l.fake != nil {
		return l.fake.Now()
	}
	return time.Now()
}

// inProcess starts a server with a fake clock and returns a link to it
// over an in-memory transport and one over Streamable HTTP.
func inProcess(t *testing.T, opts *clienttest.Options) (*clienttest.Server, *clocktest.Fake) {
	t.Helper()
	fake := clocktest.NewFake(start)
	var o clienttest.Options
	if opts != nil {
		o = *opts
	}
	if o.Clock == nil {
		o.Clock = fake
	} else {
		fake, _ = o.Clock.(*clocktest.Fake)
	}
	if o.Tokens == nil {
		o.Tokens = map[string]string{token: principal}
	}
	s, err := clienttest.Start(context.Background(), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, fake
}

// latest is the protocol version the go-sdk asks for by default.
const latest = "2026-07-28"

// orLatest is the version negotiated when protocol is asked for.
func orLatest(protocol string) string {
	if protocol == "" {
		return latest
	}
	return protocol
}

func memoryLink(t *testing.T, protocol string) link {
	s, fake := inProcess(t, nil)
	return link{
		name:       "memory",
		protocol:   protocol,
		negotiated: orLatest(protocol),
		transport:  func(ctx context.Context) (mcp.Transport, error) { return s.Transport(ctx, principal) },
		publish:    publisher(s),
		fake:       fake,
		kill:       func(*testing.T) { s.CloseSessions() },
		server:     s,
	}
}

// httpLink reaches the server over Streamable HTTP. The server's handler is
// stateful, and the go-sdk settles stateful sessions on 2025-11-25 even when
// 2026-07-28 is asked for.
func httpLink(t *testing.T, protocol string) link {
	s, fake := inProcess(t, nil)
	return link{
		name:       "http",
		protocol:   protocol,
		negotiated: "2025-11-25",
		transport:  client.StreamableHTTP(s.MCPEndpoint, token),
		publish:    publisher(s),
		fake:       fake,
		kill:       func(*testing.T) { s.CloseSessions() },
		server:     s,
	}
}

func publisher(s *clienttest.Server) func(t *testing.T, typ, data string) string {
	return func(t *testing.T, typ, data string) string {
		t.Helper()
		id, err := s.Publish(context.Background(), mcpe.EventInput{Type: typ, Data: json.RawMessage(data)})
		if err != nil {
			t.Fatalf("publish %s: %v", typ, err)
		}
		return id
	}
}

// The mcpe-server binary, built once when a test needs it.
var (
	binaryOnce sync.Once
	binaryDir  string
	binaryPath string
	binaryErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binaryDir != "" {
		os.RemoveAll(binaryDir)
	}
	os.Exit(code)
}

func serverBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		if binaryDir, binaryErr = os.MkdirTemp("", "mcpe-client-test"); binaryErr != nil {
			return
		}
		binaryPath = filepath.Join(binaryDir, "mcpe-server")
		out, err := exec.Command("go", "build", "-o", binaryPath, "github.com/mcpe-server/mcpe-server/cmd/mcpe-server").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("build mcpe-server: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// stdioLink starts the real binary as an MCP stdio server (which also
// serves HTTP, for publishing) each time the client connects; every process
// uses the same database. It lets "@every 1s" digests through. The principal
// of stdio is "local".
func stdioLink(t *testing.T, protocol string) link {
	return stdioLinkConfig(t, protocol, "subscriptions:\n  minEvery: 1s\n")
}

// stdioLinkConfig is stdioLink with the server's configuration file.
func stdioLinkConfig(t *testing.T, protocol, config string) link {
	s := &stdioServer{bin: serverBinary(t), dir: t.TempDir()}
	s.cfg = filepath.Join(s.dir, "config.yaml")
	if err := os.WriteFile(s.cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			s.mu.Lock()
			t.Logf("server log:\n%s", s.logs.String())
			s.mu.Unlock()
		}
	})
	return link{
		name:       "stdio",
		protocol:   protocol,
		negotiated: orLatest(protocol),
		transport:  func(context.Context) (mcp.Transport, error) { return s.start(t), nil },
		publish:    s.publish,
		kill:       s.kill,
	}
}

// stdioServer is the current mcpe-server process of a stdio link.
type stdioServer struct {
	bin, dir, cfg string

	mu   sync.Mutex
	cmd  *exec.Cmd
	addr chan string // the current process's HTTP address, once known
	base string
	logs strings.Builder
}

var listenLine = regexp.MustCompile(`msg="HTTP server listening" addr=(\S+)`)

func (s *stdioServer) start(t *testing.T) mcp.Transport {
	cmd := exec.Command(s.bin, "--stdio", "--http", "127.0.0.1:0", "--db", filepath.Join(s.dir, "mcpe.db"), "--config", s.cfg)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	t.Cleanup(func() { pw.Close() })
	addr := make(chan string, 1)
	s.mu.Lock()
	s.cmd, s.addr, s.base = cmd, addr, ""
	s.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.mu.Lock()
			s.logs.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	return &mcp.CommandTransport{Command: cmd}
}

// kill ends the current process with SIGKILL.
func (s *stdioServer) kill(t *testing.T) {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		t.Fatal("no server process to kill")
	}
	s.mu.Lock()
	s.cmd, s.addr, s.base = nil, nil, ""
	s.mu.Unlock()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill the server: %v", err)
	}
}

// url returns the HTTP base URL of the current process, waiting for the
// client to start one after a kill.
func (s *stdioServer) url(t *testing.T) string {
	t.Helper()
	deadline := time.After(wait)
	for {
		s.mu.Lock()
		base, addr := s.base, s.addr
		s.mu.Unlock()
		if base != "" {
			return base
		}
		if addr == nil {
			select {
			case <-time.After(10 * time.Millisecond):
				continue
			case <-deadline:
				t.Fatal("no server process was started")
			}
		}
		select {
		case a := <-addr:
			s.mu.Lock()
			if s.addr == addr {
				s.base = "http://" + a
			}
			s.mu.Unlock()
			return "http://" + a
		case <-deadline:
			t.Fatal("the server did not report its HTTP address")
		}
	}
}

func (s *stdioServer) publish(t *testing.T, typ, data string) string {
	t.Helper()
	body := fmt.Sprintf(`{"type": %q, "data": %s}`, typ, data)
	resp, err := http.Post(s.url(t)+"/v1/events", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/events: %s %s", resp.Status, b)
	}
	var res struct{ ID string }
	if err := json.Unmarshal(b, &res); err != nil || res.ID == "" {
		t.Fatalf("POST /v1/events answered %s", b)
	}
	return res.ID
}

// forEachLink runs f over every link, in a subtest named after it.
func forEachLink(t *testing.T, f func(t *testing.T, l link)) {
	for _, name := range []string{"memory", "http", "stdio"} {
		for _, protocol := range []string{"2026-07-28", "2025-11-25"} {
			t.Run(name+"/"+protocol, func(t *testing.T) {
				var l link
				switch name {
				case "memory":
					l = memoryLink(t, protocol)
				case "http":
					l = httpLink(t, protocol)
				case "stdio":
					l = stdioLink(t, protocol)
				}
				f(t, l)
			})
		}
	}
}

// connect connects a client over l after register has added its handlers.
func connect(t *testing.T, l link, opts *client.Options, register func(c *client.Client)) *client.Client {
	t.Helper()
	var o client.Options
	if opts != nil {
		o = *opts
	}
	o.ProtocolVersion = l.protocol
	c, err := client.New(&o)
	if err != nil {
		t.Fatal(err)
	}
	if register != nil {
		register(c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tr, err := l.transport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx, tr); err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if got := c.Session().InitializeResult().ProtocolVersion; got != l.negotiated {
		t.Errorf("protocol version = %s, want %s", got, l.negotiated)
	}
	return c
}

// ctxT is a context bounded by wait, ended with the test.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// received is one delivery recorded by a handler.
type received struct {
	Handler        string
	SubscriptionID string
	Type           string // of the event; "" for a batch or an expiry
	ID             string // of the event
	Events         []string
	Remaining      int
}

// recorder collects deliveries from handlers.
type recorder struct {
	ch chan received
}

func newRecorder() *recorder { return &recorder{ch: make(chan received, 10000)} }

func (r *recorder) event(name string) client.EventHandler {
	return func(_ context.Context, sub string, ev mcpe.Event) {
		r.ch <- received{Handler: name, SubscriptionID: sub, Type: ev.Type, ID: ev.ID}
	}
}

func (r *recorder) batch(_ context.Context, b mcpe.BatchParams) {
	got := received{Handler: "batch", SubscriptionID: b.SubscriptionID, Events: []string{}, Remaining: b.Remaining}
	for _, raw := range b.Events {
		var ev mcpe.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			got.Events = append(got.Events, "undecodable: "+err.Error())
			continue
		}
		got.Events = append(got.Events, ev.ID)
	}
	r.ch <- got
}

func (r *recorder) expired(_ context.Context, sub string) {
	r.ch <- received{Handler: "expired", SubscriptionID: sub}
}

// next returns the next delivery, failing after wait.
func (r *recorder) next(t *testing.T) received {
	t.Helper()
	select {
	case got := <-r.ch:
		return got
	case <-time.After(wait):
		t.Fatalf("no delivery within %v", wait)
		return received{}
	}
}

// expect checks that the next deliveries are want, in any order.
func (r *recorder) expect(t *testing.T, want ...received) {
	t.Helper()
	got := make([]received, 0, len(want))
	for range want {
		got = append(got, r.next(t))
	}
	less := func(a, b received) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) }
	if diff := cmp.Diff(slices.SortedFunc(slices.Values(want), less), slices.SortedFunc(slices.Values(got), less)); diff != "" {
		t.Errorf("deliveries mismatch (-want +got):\n%s", diff)
	}
}

// none checks that nothing more was delivered: the catch-up reads the
// inbox, where anything delivered is written first, and goes through the
// dispatch queue after everything received so far.
func (r *recorder) none(t *testing.T, c *client.Client) {
	t.Helper()
	if err := c.CatchUp(ctxT(t)); err != nil {
		t.Fatalf("CatchUp: %v", err)
	}
	select {
	case got := <-r.ch:
		t.Fatalf("unexpected delivery %+v", got)
	default:
	}
}
