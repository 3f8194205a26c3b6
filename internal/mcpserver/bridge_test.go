package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/client"
)

// waitLimit bounds every wait in these tests.
const waitLimit = 10 * time.Second

// upgradeHelp is the start of every failure of TestSessionSinkLayout.
const upgradeHelp = "the notification bridge (bridge.go) no longer works with the go-sdk in go.mod. It reaches an unexported field of " +
	"mcp.ServerSession (see bridge.go) because the SDK has no public way to send custom notifications " +
	"(https://github.com/modelcontextprotocol/go-sdk/issues/745). If the SDK was just upgraded, update " +
	"the bridge (or switch to the upstream API if it has landed) before shipping: without it no client " +
	"receives events/event notifications"

// notification is one MCPE notification as a client handler got it.
type notification struct {
	Method string
	Params string
}

// collector returns a client.TapHandler that sends what it gets to the channel.
func collector() (client.TapHandler, chan notification) {
	ch := make(chan notification, 64)
	return func(method string, params json.RawMessage) {
		ch <- notification{Method: method, Params: string(params)}
	}, ch
}

// connectInMemory connects a client with the bridge to server over the
// in-memory transport and returns the server's session.
func connectInMemory(t *testing.T, server *mcp.Server, h client.TapHandler, opts *mcp.ClientSessionOptions) (*mcp.ServerSession, *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("%s: server connect over in-memory transport: %v", upgradeHelp, err)
	}
	t.Cleanup(func() { ss.Close() })
	mc := mcp.NewClient(&mcp.Implementation{Name: "bridge-test-client", Version: "0"}, nil)
	cs, err := mc.Connect(ctx, client.Tap(ct, h), opts)
	if err != nil {
		t.Fatalf("%s: client connect over in-memory transport: %v", upgradeHelp, err)
	}
	t.Cleanup(func() { cs.Close() })
	return ss, cs
}

// connectHTTP serves server with the SDK's Streamable HTTP handler on a
// loopback listener, connects a client with the bridge, and returns the
// server's session.
func connectHTTP(t *testing.T, server *mcp.Server, h client.TapHandler, opts *mcp.ClientSessionOptions) (*mcp.ServerSession, *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	mc := mcp.NewClient(&mcp.Implementation{Name: "bridge-test-client", Version: "0"}, nil)
	transport := client.Tap(&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: srv.Client()}, h)
	cs, err := mc.Connect(ctx, transport, opts)
	if err != nil {
		t.Fatalf("%s: client connect over Streamable HTTP: %v", upgradeHelp, err)
	}
	// Close the client before the server: srv.Close waits for the
	// client's open event stream.
	t.Cleanup(func() { cs.Close() })
	if cs.ID() == "" {
		t.Fatalf("%s: the client has no Mcp-Session-Id over stateful Streamable HTTP", upgradeHelp)
	}
	// Find the client's session by its Mcp-Session-Id: the server may also
	// hold a session from the client's first try of the newer protocol.
	var ids []string
	for ss := range server.Sessions() {
		if ss.ID() == cs.ID() {
			return ss, cs
		}
		ids = append(ids, ss.ID())
	}
	t.Fatalf("%s: no server session has the client's session ID %q over Streamable HTTP (server sessions: %q)", upgradeHelp, cs.ID(), ids)
	return nil, nil
}

// notifyUntilDelivered writes one notification with sink, retrying while
// the session cannot take it yet: over Streamable HTTP the client opens its
// standalone event stream shortly after it connects.
func notifyUntilDelivered(t *testing.T, sink *Sink, method string, params json.RawMessage) {
	t.Helper()
	// A detached context, as the server uses: it routes the write to the
	// session's standalone stream.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	const maxAttempts = 1_000_000
	var err error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if err = sink.Notify(ctx, method, params); err == nil {
			if attempt > 1 {
				t.Logf("first notification delivered on attempt %d", attempt)
			}
			return
		}
		if ctx.Err() != nil {
			break
		}
		runtime.Gosched()
	}
	t.Fatalf("%s: Sink.Notify(%s) kept failing: %v", upgradeHelp, method, err)
}

func TestSessionSinkLayout(t *testing.T) {
	if err := CheckBridge(); err != nil {
		t.Fatalf("%s: CheckBridge() = %v", upgradeHelp, err)
	}
	transports := []struct {
		name    string
		connect func(*testing.T, *mcp.Server, client.TapHandler, *mcp.ClientSessionOptions) (*mcp.ServerSession, *mcp.ClientSession)
	}{
		{name: "in-memory", connect: connectInMemory},
		{name: "streamable HTTP", connect: connectHTTP},
	}
	versions := []struct {
		name string
		opts *mcp.ClientSessionOptions
	}{
		{name: "default protocol", opts: nil},
		{name: "protocol 2025-11-25", opts: &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}},
	}
	for _, tr := range transports {
		for _, v := range versions {
			t.Run(tr.name+"/"+v.name, func(t *testing.T) {
				server := mcp.NewServer(&mcp.Implementation{Name: "bridge-test", Version: "0"}, nil)
				h, got := collector()
				ss, cs := tr.connect(t, server, h, v.opts)
				if res := cs.InitializeResult(); res != nil {
					t.Logf("negotiated protocol %s", res.ProtocolVersion)
				}
				sink, err := SessionSink(ss)
				if err != nil {
					t.Fatalf("%s: SessionSink: %v", upgradeHelp, err)
				}
				want := []notification{
					{Method: "events/event", Params: `{"subscriptionId":"sub-1","cursor":"1","event":{"id":"e1","type":"a.b","data":{}}}`},
					{Method: "events/subscription_expired", Params: `{"subscriptionId":"sub-1","cursor":"2"}`},
					{Method: "events/batch", Params: `{"subscriptionId":"sub-2","events":[]}`},
				}
				for i, n := range want {
					if i == 0 {
						notifyUntilDelivered(t, sink, n.Method, json.RawMessage(n.Params))
						continue
					}
					ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
					err := sink.Notify(ctx, n.Method, json.RawMessage(n.Params))
					cancel()
					if err != nil {
						t.Fatalf("%s: Sink.Notify(%s) once the session took a notification: %v", upgradeHelp, n.Method, err)
					}
				}
				var gotAll []notification
				for range want {
					select {
					case n := <-got:
						gotAll = append(gotAll, n)
					case <-time.After(waitLimit):
						t.Fatalf("%s: the client received %d of %d notifications: %+v", upgradeHelp, len(gotAll), len(want), gotAll)
					}
				}
				if diff := cmp.Diff(want, gotAll); diff != "" {
					t.Errorf("%s: notifications mismatch (-want +got):\n%s", upgradeHelp, diff)
				}

				// The session still works for ordinary traffic.
				ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
				defer cancel()
				if _, err := cs.ListTools(ctx, nil); err != nil {
					t.Errorf("%s: tools/list after the notifications: %v", upgradeHelp, err)
				}
			})
		}
	}
}

func TestSessionSinkNil(t *testing.T) {
	if _, err := SessionSink(nil); err == nil {
		t.Errorf("SessionSink(nil) succeeded; want an error")
	}
}
