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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/client/clienttest"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
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
	fake *clock.Fake
	// catalog is true when the server offers events_catalog.
	catalog bool
}

// inProcess starts a server with a fake clock and returns a link to it
// over an in-memory transport and one over Streamable HTTP.
func inProcess(t *testing.T, opts *clienttest.Options) (*clienttest.Server, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(start)
	var o clienttest.Options
	if opts != nil {
		o = *opts
	}
	if o.Clock == nil {
		o.Clock = fake
	} else {
		fake, _ = o.Clock.(*clock.Fake)
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

func memoryLink(t *testing.T, protocol string) link {
	s, fake := inProcess(t, nil)
	return link{
		name:       "memory",
		protocol:   protocol,
		negotiated: protocol,
		transport:  func(ctx context.Context) (mcp.Transport, error) { return s.Transport(ctx, principal) },
		publish:    publisher(s),
		fake:       fake,
		catalog:    true,
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
		transport:  func(context.Context) (mcp.Transport, error) { return httpTransport(s.MCPEndpoint, token), nil },
		publish:    publisher(s),
		fake:       fake,
		catalog:    true,
	}
}

func publisher(s *clienttest.Server) func(t *testing.T, typ, data string) string {
	return func(t *testing.T, typ, data string) string {
		t.Helper()
		id, err := s.Publish(context.Background(), subscriptions.EventInput{Type: typ, Data: json.RawMessage(data)})
		if err != nil {
			t.Fatalf("publish %s: %v", typ, err)
		}
		return id
	}
}

// httpTransport is a Streamable HTTP transport that sends a bearer token.
func httpTransport(endpoint, token string) *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{token}}}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
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

var listenLine = regexp.MustCompile(`msg="HTTP server listening" addr=(\S+)`)

// stdioLink starts the real binary as an MCP stdio server (which also
// serves HTTP, for publishing) when the client connects. It lets "@every
// 1s" digests through. The principal of stdio is "local".
func stdioLink(t *testing.T, protocol string) link {
	bin := serverBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("delivery:\n  minEvery: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addrs := make(chan string, 1)
	var base string
	var logs strings.Builder
	var logMu sync.Mutex
	t.Cleanup(func() {
		if t.Failed() {
			logMu.Lock()
			t.Logf("server log:\n%s", logs.String())
			logMu.Unlock()
		}
	})
	l := link{name: "stdio", protocol: protocol, negotiated: protocol}
	if protocol == "" {
		l.negotiated = "2026-07-28"
	}
	l.transport = func(context.Context) (mcp.Transport, error) {
		cmd := exec.Command(bin, "--stdio", "--http", "127.0.0.1:0", "--db", filepath.Join(dir, "mcpe.db"), "--config", cfg)
		pr, pw := io.Pipe()
		cmd.Stderr = pw
		t.Cleanup(func() { pw.Close() })
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				logMu.Lock()
				logs.WriteString(sc.Text() + "\n")
				logMu.Unlock()
				if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
					select {
					case addrs <- m[1]:
					default:
					}
				}
			}
		}()
		return &mcp.CommandTransport{Command: cmd}, nil
	}
	l.publish = func(t *testing.T, typ, data string) string {
		t.Helper()
		if base == "" {
			select {
			case a := <-addrs:
				base = "http://" + a
			case <-time.After(wait):
				t.Fatal("the server did not report its HTTP address")
			}
		}
		body := fmt.Sprintf(`{"type": %q, "data": %s}`, typ, data)
		resp, err := http.Post(base+"/v1/events", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST /v1/events: %s %s", resp.Status, b)
		}
		var res struct{ ID string }
		json.Unmarshal(b, &res)
		return res.ID
	}
	return l
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
	Type           string
	ID             string
}

// recorder collects deliveries from handlers.
type recorder struct {
	ch chan received
}

func newRecorder() *recorder { return &recorder{ch: make(chan received, 10000)} }

func (r *recorder) event(name string) client.EventHandler {
	return func(_ context.Context, sub string, ev subscriptions.Event) {
		r.ch <- received{Handler: name, SubscriptionID: sub, Type: ev.Type, ID: ev.ID}
	}
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

// none checks that nothing more was delivered, after c handled everything
// queued so far.
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
