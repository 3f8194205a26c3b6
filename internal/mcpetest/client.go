// Package mcpetest connects go-sdk clients to an MCPE server in tests: it
// records the events/* notifications the SDK would drop, calls the tools and
// decodes their results.
package mcpetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Wait bounds every wait for a notification.
const Wait = 10 * time.Second

// Notification is one events/* notification a client received.
type Notification struct {
	Method string
	Params json.RawMessage
}

// Client is a connected test client.
type Client struct {
	Session *mcp.ClientSession
	done    chan struct{} // closed when the session ends

	mu      sync.Mutex
	initRaw json.RawMessage
	// notes holds the notifications received and not yet taken. It grows
	// as needed instead of being a large buffered channel, whose whole
	// buffer the garbage collector would scan in every cycle and so skew
	// the benchmarks that use this client.
	notes []Notification
	// arrived has a value when notes may have grown since it was last
	// taken.
	arrived chan struct{}
}

// push queues a received notification.
func (c *Client) push(n Notification) {
	c.mu.Lock()
	c.notes = append(c.notes, n)
	c.mu.Unlock()
	select {
	case c.arrived <- struct{}{}:
	default:
	}
}

// pop takes the oldest queued notification.
func (c *Client) pop() (Notification, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.notes) == 0 {
		return Notification{}, false
	}
	n := c.notes[0]
	c.notes[0] = Notification{}
	c.notes = c.notes[1:]
	if len(c.notes) == 0 {
		c.notes = nil // let the backing array go
	}
	return n, true
}

// Connect connects a client over t and closes it when the test ends. opts
// may be nil.
func Connect(t testing.TB, t2 mcp.Transport, opts *mcp.ClientSessionOptions) *Client {
	t.Helper()
	return ConnectWith(t, t2, nil, opts)
}

// ConnectWith is Connect with client options, such as a sampling handler.
func ConnectWith(t testing.TB, t2 mcp.Transport, clientOpts *mcp.ClientOptions, opts *mcp.ClientSessionOptions) *Client {
	t.Helper()
	c := &Client{arrived: make(chan struct{}, 1)}
	transport := client.Tap(&recordInit{Transport: t2, c: c}, func(method string, params json.RawMessage) {
		c.push(Notification{Method: method, Params: params})
	})
	if _, ok := t2.(*mcp.StreamableClientTransport); ok {
		// recordInit would hide the streamable connection's private
		// interface and so its event stream; the bridge taps HTTP instead.
		transport = client.Tap(t2, func(method string, params json.RawMessage) {
			c.push(Notification{Method: method, Params: params})
		})
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpetest", Version: "1"}, clientOpts)
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	cs, err := client.Connect(ctx, transport, opts)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	c.Session = cs
	c.done = make(chan struct{})
	go func() { cs.Wait(); close(c.done) }()
	return c
}

// InitializeRaw returns the raw JSON of the initialize or server/discover
// result, when the transport let it be seen (not Streamable HTTP).
func (c *Client) InitializeRaw() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.initRaw
}

// Call calls a tool and returns its structured result, or its error text.
func (c *Client) Call(t testing.TB, tool string, args any) (result json.RawMessage, errText string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	res, err := c.Session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	var text strings.Builder
	for _, content := range res.Content {
		if tc, ok := content.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return nil, text.String()
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("call %s: encode structured content: %v", tool, err)
	}
	return b, ""
}

// MustCall calls a tool that must succeed and decodes its result into out.
func (c *Client) MustCall(t testing.TB, tool string, args, out any) {
	t.Helper()
	res, errText := c.Call(t, tool, args)
	if errText != "" {
		t.Fatalf("call %s(%s): tool error: %s", tool, mustJSON(args), errText)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("call %s: decode %s: %v", tool, res, err)
		}
	}
}

// CallError calls a tool that must fail and returns its error text.
func (c *Client) CallError(t testing.TB, tool string, args any) string {
	t.Helper()
	res, errText := c.Call(t, tool, args)
	if errText == "" {
		t.Fatalf("call %s(%s) succeeded with %s; want a tool error", tool, mustJSON(args), res)
	}
	return errText
}

// Subscribe calls events_subscribe and returns the subscription.
func (c *Client) Subscribe(t testing.TB, args any) *subscriptions.Subscription {
	t.Helper()
	var sub subscriptions.Subscription
	c.MustCall(t, "events_subscribe", args, &sub)
	return &sub
}

// Next returns the next notification, failing the test after Wait.
func (c *Client) Next(t testing.TB) Notification {
	t.Helper()
	timeout := time.NewTimer(Wait)
	defer timeout.Stop()
	for {
		if n, ok := c.pop(); ok {
			return n
		}
		select {
		case <-c.arrived:
		case <-timeout.C:
			t.Fatalf("no notification within %v", Wait)
			return Notification{}
		}
	}
}

// NextEvent returns the next notification, which must be events/event.
func (c *Client) NextEvent(t testing.TB) (mcpe.EventParams, mcpe.Event) {
	t.Helper()
	n := c.Next(t)
	if n.Method != mcpe.MethodEvent {
		t.Fatalf("got %s %s; want %s", n.Method, n.Params, mcpe.MethodEvent)
	}
	var p mcpe.EventParams
	if err := json.Unmarshal(n.Params, &p); err != nil {
		t.Fatalf("decode %s params %s: %v", n.Method, n.Params, err)
	}
	var ev mcpe.Event
	if err := json.Unmarshal(p.Event, &ev); err != nil {
		t.Fatalf("decode event %s: %v", p.Event, err)
	}
	return p, ev
}

// Pending returns the notifications received and not yet taken, without
// waiting.
func (c *Client) Pending() []Notification {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.notes
	c.notes = nil
	return out
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// recordInit keeps the raw result of initialize / server/discover.
type recordInit struct {
	mcp.Transport
	c *Client
}

func (r *recordInit) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := r.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordConn{Connection: conn, c: r.c}, nil
}

type recordConn struct {
	mcp.Connection
	c *Client
}

func (r *recordConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := r.Connection.Read(ctx)
	if resp, ok := m.(*jsonrpc.Response); ok && err == nil && resp.Error == nil {
		r.c.mu.Lock()
		if r.c.initRaw == nil && strings.Contains(string(resp.Result), `"capabilities"`) {
			r.c.initRaw = append(json.RawMessage(nil), resp.Result...)
		}
		r.c.mu.Unlock()
	}
	return m, err
}

// String describes a notification, for failure messages.
func (n Notification) String() string { return fmt.Sprintf("%s %s", n.Method, n.Params) }

// NextOrClosed waits for the next notification without a deadline; ok is
// false once the client has closed. Benchmarks use it.
func (c *Client) NextOrClosed() (Notification, bool) {
	for {
		if n, ok := c.pop(); ok {
			return n, true
		}
		select {
		case <-c.arrived:
		case <-c.done:
			// What arrived before the end is still returned.
			if n, ok := c.pop(); ok {
				return n, true
			}
			return Notification{}, false
		}
	}
}
