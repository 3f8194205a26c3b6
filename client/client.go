package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Defaults for Options.
const (
	DefaultBackoffMin = 100 * time.Millisecond
	DefaultBackoffMax = 30 * time.Second
)

var (
	// ErrClosed is returned by the calls of a closed Client.
	ErrClosed = errors.New("client: closed")
	// ErrNotConnected is returned by calls made before Connect.
	ErrNotConnected = errors.New("client: not connected")
	// ErrSessionEnded is returned by calls made after the session ended,
	// when there is no Options.Reconnect to start another.
	ErrSessionEnded = errors.New("client: session ended")
	// ErrNoEvents is returned by CatchUp when the server does not
	// advertise the MCPE events capability.
	ErrNoEvents = errors.New("client: the server does not advertise the MCPE events capability")
)

// Options configure a Client. A nil *Options means all defaults.
type Options struct {
	// Implementation names the client to the server; nil means
	// {Name: "mcpe-client", Version: "dev"}.
	Implementation *mcp.Implementation
	// ProtocolVersion is the MCP version asked for, such as "2025-11-25";
	// empty lets the go-sdk choose, except over Streamable HTTP, where it
	// means 2025-11-25: under 2026-07-28 HTTP is stateless, and a server
	// that serves it so (mcpe-server's http.stateless) sends notifications
	// only on subscriptions/listen streams, which this Client does not
	// open. The server may settle on another.
	ProtocolVersion string
	// ClientOptions are passed to mcp.NewClient: a sampling handler, a
	// keep-alive, and the like; nil means the go-sdk's defaults.
	ClientOptions *mcp.ClientOptions
	// Logger receives the client's warnings (session ended, reconnecting,
	// undecodable notifications); nil discards them.
	Logger *slog.Logger
	// Reconnect returns a fresh transport to the same server, for the same
	// principal (Command and StreamableHTTP make one). When set, a session
	// that ends other than by Close is replaced, and what it missed is
	// caught up (see the package documentation). Nil: when the session
	// ends, calls fail with ErrSessionEnded.
	Reconnect Dialer
	// BackoffMin and BackoffMax bound the wait before each reconnection
	// attempt: it doubles from BackoffMin up to BackoffMax, and a random
	// part of up to half of it is taken off. Zero means DefaultBackoffMin
	// and DefaultBackoffMax.
	BackoffMin, BackoffMax time.Duration
	// Cursor is an inbox position to resume from, such as the Cursor of an
	// earlier run: Connect passes what the inbox holds after it to the
	// handlers. Empty: the handlers see what arrives once connected.
	Cursor string
	// Clock times the waits between reconnection attempts; nil is the
	// wall clock.
	Clock clock.Clock
}

// A Dialer returns a fresh transport to an MCPE server.
type Dialer func(ctx context.Context) (mcp.Transport, error)

func (o *Options) validate() error {
	switch {
	case o.BackoffMin < 0:
		return fmt.Errorf("client: Options.BackoffMin is %v; give a positive duration, or zero for %v", o.BackoffMin, DefaultBackoffMin)
	case o.BackoffMax < 0:
		return fmt.Errorf("client: Options.BackoffMax is %v; give a positive duration, or zero for %v", o.BackoffMax, DefaultBackoffMax)
	case o.BackoffMax > 0 && o.BackoffMax < o.BackoffMin:
		return fmt.Errorf("client: Options.BackoffMax (%v) is less than Options.BackoffMin (%v)", o.BackoffMax, o.BackoffMin)
	}
	if o.Cursor != "" {
		if _, err := mcpe.ParseCursor(o.Cursor); err != nil {
			return fmt.Errorf("client: Options.Cursor %q is not a cursor; pass one that Client.Cursor or events_poll returned", o.Cursor)
		}
	}
	return nil
}

// Client is a connection to an MCPE server. Its methods are safe for
// concurrent use.
type Client struct {
	opts Options
	log  *slog.Logger
	mcp  *mcp.Client

	// ctx lives until Close; handlers get it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the dispatcher and the session watcher

	mu      sync.Mutex
	started bool // Connect was called
	closed  bool
	session *mcp.ClientSession // nil while disconnected
	caps    *mcpe.Capability
	ended   error         // why the session ended, when it is not replaced
	changed chan struct{} // closed and replaced when the fields above change
	// mark is the highest inbox position delivered, -1 before any, and
	// markSubs the subscriptions delivered at it, nil when all were; base
	// is the inbox end read at Connect, -1 before, which catch-ups read
	// after (see the package documentation). The dispatcher alone moves
	// them; markSubs is its alone.
	mark, base int64
	markSubs   []string

	handlers handlers
	queue    fifo[item]
	streams  streamRouter  // the SEP-3415 push streams
	done     chan struct{} // closed by stop
	stopOnce sync.Once
	err      error // why done was closed
}

// New returns a Client that is not connected yet: register handlers, then
// call Connect.
func New(opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.Implementation = cmp.Or(o.Implementation, &mcp.Implementation{Name: "mcpe-client", Version: "dev"})
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	o.BackoffMin = cmp.Or(o.BackoffMin, min(DefaultBackoffMin, max(o.BackoffMax, 1)))
	o.BackoffMax = cmp.Or(o.BackoffMax, max(DefaultBackoffMax, o.BackoffMin))
	o.Clock = cmp.Or[clock.Clock](o.Clock, clock.Real{})
	c := &Client{
		opts:    o,
		log:     o.Logger,
		mcp:     mcp.NewClient(o.Implementation, o.ClientOptions),
		changed: make(chan struct{}),
		done:    make(chan struct{}),
		mark:    -1,
		base:    -1,
	}
	c.queue.init()
	c.streams.init()
	if err := addEventsMethods(c.mcp); err != nil {
		return nil, err
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.reach(o.Cursor)
	return c, nil
}

// Connect connects a new Client over t; see Client.Connect. It is New
// followed by Client.Connect: a notification that arrives before a handler
// is registered is dropped, so use New when subscriptions may already
// exist.
func Connect(ctx context.Context, t mcp.Transport, opts *Options) (*Client, error) {
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx, t); err != nil {
		return nil, err
	}
	return c, nil
}

// Connect opens the session over t (or over a transport from
// Options.Reconnect when t is nil) and starts delivering notifications to
// the handlers. With Options.Cursor it first delivers what the inbox holds
// after that cursor; without, it reads where the inbox ends now (with
// events_poll, which also moves the server's own poll position there), the
// start of any later catch-up. Connect may be called once; when it fails,
// the Client is closed.
func (c *Client) Connect(ctx context.Context, t mcp.Transport) (err error) {
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return ErrClosed
	case c.started:
		c.mu.Unlock()
		return errors.New("client: Connect called twice")
	}
	c.started = true
	c.mu.Unlock()
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if t == nil {
		if c.opts.Reconnect == nil {
			return errors.New("client: Connect needs a transport, or Options.Reconnect to make one")
		}
		if t, err = c.opts.Reconnect(ctx); err != nil {
			return fmt.Errorf("client: make transport: %w", err)
		}
	}
	cs, err := c.dial(ctx, t)
	if err != nil {
		return err
	}
	c.wg.Add(2)
	go c.dispatch()
	go c.watch(cs)

	if !c.SupportsEvents() && c.opts.Cursor == "" {
		// Not an MCPE server: there is no inbox to read. The handlers
		// still get whatever events/* notifications it sends.
		return nil
	}
	if err := c.runCatchUp(ctx); err != nil && c.opts.Cursor != "" {
		return fmt.Errorf("client: catch up from cursor %s: %w", c.opts.Cursor, err)
	} else if err != nil {
		return fmt.Errorf("client: read the inbox position: %w", err)
	}
	return nil
}

// httpProtocol is the version asked for over Streamable HTTP when
// Options.ProtocolVersion leaves it open.
const httpProtocol = "2025-11-25"

// dial connects a session over t, makes sure the server attached it, so
// that every delivery from then on is notified to it, and makes it the
// current session; ErrClosed when the Client closed meanwhile.
func (c *Client) dial(ctx context.Context, t mcp.Transport) (*mcp.ClientSession, error) {
	version := c.opts.ProtocolVersion
	if _, ok := t.(*mcp.StreamableClientTransport); ok && version == "" {
		version = httpProtocol
	}
	cs, err := c.mcp.Connect(ctx, c.wrap(t), &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, fmt.Errorf("client: connect: %w", err)
	}
	// The server attaches a session to its notifications when the
	// session's first call completes (under protocol 2026-07-28 there is no
	// initialized notification); a catch-up or a subscription made by that
	// first call could otherwise miss what happens meanwhile.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		cs.Close()
		return nil, fmt.Errorf("client: list tools: %w", err)
	}
	if !c.setSession(cs) {
		cs.Close()
		return nil, ErrClosed
	}
	return cs, nil
}

// setSession makes cs the current session; it reports false when the
// Client is closed.
func (c *Client) setSession(cs *mcp.ClientSession) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.session, c.caps = cs, capabilityOf(cs)
	c.signalLocked()
	return true
}

// signalLocked wakes the goroutines waiting for a change of session.
func (c *Client) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// current returns the live session, waiting for a reconnection in progress
// until ctx ends.
func (c *Client) current(ctx context.Context) (*mcp.ClientSession, error) {
	for {
		c.mu.Lock()
		cs, closed, started, ended, changed := c.session, c.closed, c.started, c.ended, c.changed
		c.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case cs != nil:
			return cs, nil
		case ended != nil:
			return nil, fmt.Errorf("%w: %v", ErrSessionEnded, ended)
		case !started:
			return nil, ErrNotConnected
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		}
	}
}

// Session returns the current go-sdk session, for the MCP calls this
// package does not wrap; nil while disconnected.
func (c *Client) Session() *mcp.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Capability returns the server's MCPE capability, read from the
// initialize (or server/discover) result of the current session: the
// server puts it at capabilities.events and at
// capabilities.experimental.events, and the go-sdk keeps the latter. ok is
// false when the server advertises none, or while disconnected.
func (c *Client) Capability() (caps mcpe.Capability, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.caps == nil {
		return mcpe.Capability{}, false
	}
	caps = *c.caps
	caps.DeliveryChannels = append([]mcpe.Channel(nil), caps.DeliveryChannels...)
	caps.Handlers = append([]mcpe.HandlerType(nil), caps.Handlers...)
	return caps, true
}

// SupportsEvents reports whether the server advertises the MCPE events
// capability.
func (c *Client) SupportsEvents() bool {
	_, ok := c.Capability()
	return ok
}

// capabilityOf is the MCPE capability cs's server advertises, nil for none.
func capabilityOf(cs *mcp.ClientSession) *mcpe.Capability {
	res := cs.InitializeResult()
	if res == nil || res.Capabilities == nil || res.Capabilities.Experimental["events"] == nil {
		return nil
	}
	var caps mcpe.Capability
	b, err := json.Marshal(res.Capabilities.Experimental["events"])
	if err != nil || json.Unmarshal(b, &caps) != nil {
		return nil
	}
	return &caps
}

// Cursor returns the highest inbox cursor delivered to the handlers, or
// read past by a catch-up: save it to resume from with Options.Cursor.
// Empty until there is one.
func (c *Client) Cursor() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if max(c.mark, c.base) < 0 {
		return ""
	}
	return mcpe.FormatCursor(max(c.mark, c.base))
}

// Done returns a channel that is closed when the Client stops for good:
// Close was called, or the session ended and there is no
// Options.Reconnect. Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns nil until Done is closed, then ErrClosed, or an error
// wrapping ErrSessionEnded with the reason the session ended.
func (c *Client) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// stop closes done with err, once.
func (c *Client) stop(err error) {
	c.stopOnce.Do(func() {
		c.err = err
		close(c.done)
	})
}

// Close ends the session, stops reconnecting and delivering, and waits for
// a handler in progress to return (its context is cancelled). Deliveries
// still queued are dropped; they stay in the server's inbox. Close must
// not be called from a handler. It is safe to call more than once.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.wg.Wait()
		return nil
	}
	c.closed = true
	cs := c.session
	c.session, c.caps = nil, nil
	c.signalLocked()
	c.mu.Unlock()

	c.cancel()
	var err error
	if cs != nil {
		err = cs.Close()
	}
	c.wg.Wait()
	c.stop(ErrClosed)
	return err
}
