package mcpetest

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Gate holds up the reads of the connections made through its transports
// while it is closed: a client that stops reading, so that the server's
// writes to it block. A new Gate is open.
type Gate struct {
	mu      sync.Mutex
	ch      chan struct{} // closed while the gate is open
	release func()
}

// NewGate returns an open gate.
func NewGate() *Gate {
	g := &Gate{ch: make(chan struct{}), release: func() {}}
	close(g.ch)
	return g
}

// Close holds up reads from now on.
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch := make(chan struct{})
	g.ch, g.release = ch, sync.OnceFunc(func() { close(ch) })
}

// Open lets reads go on.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.release()
}

func (g *Gate) wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Transport returns t with its reads held up while g is closed.
func (g *Gate) Transport(t mcp.Transport) mcp.Transport { return &gatedTransport{t, g} }

type gatedTransport struct {
	mcp.Transport
	gate *Gate
}

func (t *gatedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Connection: conn, gate: t.gate}, nil
}

type gatedConn struct {
	mcp.Connection
	gate *Gate
}

func (c *gatedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := c.gate.wait(ctx); err != nil {
		return nil, err
	}
	return c.Connection.Read(ctx)
}
