package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"mime"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// pollTimeout bounds one events_poll of a catch-up.
const pollTimeout = 30 * time.Second

// watch waits for the session to end and, with Options.Reconnect, replaces
// it and queues a catch-up ahead of what the new session brings.
func (c *Client) watch(cs *mcp.ClientSession) {
	defer c.wg.Done()
	for {
		err := cs.Wait()
		if c.ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("closed by the server")
		}
		c.mu.Lock()
		if c.session == cs {
			c.session, c.caps = nil, nil
			if c.opts.Reconnect == nil {
				c.ended = err
			}
			c.signalLocked()
		}
		c.mu.Unlock()
		if c.opts.Reconnect == nil {
			c.log.Warn("MCPE session ended", "error", err)
			c.stop(fmt.Errorf("%w: %v", ErrSessionEnded, err))
			return
		}
		c.log.Warn("MCPE session ended; reconnecting", "error", err)
		c.queue.push(item{catchUp: true})
		if cs = c.redial(); cs == nil {
			return
		}
		c.log.Info("MCPE session reconnected")
	}
}

// redial connects a new session, retrying with backoff until it succeeds
// or the Client is closed (nil).
func (c *Client) redial() *mcp.ClientSession {
	for attempt := 0; ; attempt++ {
		if c.sleep(c.ctx, c.backoff(attempt)) != nil {
			return nil
		}
		t, err := c.opts.Reconnect(c.ctx)
		var cs *mcp.ClientSession
		if err == nil {
			cs, err = c.dial(c.ctx, t)
		}
		switch {
		case err == nil:
			return cs
		case errors.Is(err, ErrClosed) || c.ctx.Err() != nil:
			return nil
		}
		c.log.Warn("MCPE reconnection failed", "attempt", attempt+1, "error", err)
	}
}

// backoff is the wait before attempt (from 0): BackoffMin doubled attempt
// times, at most BackoffMax, less a random part of up to half.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.opts.BackoffMax
	if attempt < 32 {
		d = min(c.opts.BackoffMin<<attempt, c.opts.BackoffMax)
	}
	if d <= 0 {
		d = c.opts.BackoffMax
	}
	half := d / 2
	return d - half + rand.N(half+1)
}

// sleep waits for d on the Client's clock. When ctx ends or the Client
// closes first, it returns ctx's error, or ErrClosed while ctx is live.
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	fired := make(chan struct{})
	t := c.opts.Clock.AfterFunc(d, func() { close(fired) })
	defer t.Stop()
	select {
	case <-fired:
		return nil
	case <-ctx.Done():
	case <-c.ctx.Done():
	}
	return cmp.Or(ctx.Err(), ErrClosed)
}

// CatchUp reads the inbox with events_poll from the mark (see Cursor) up to
// its end and passes to the handlers what they have not seen, in order with
// the notifications around it. It waits until that is done or ctx ends.
// Reconnections and events/missed notices catch up by themselves; CatchUp
// is for a Client without Options.Reconnect, or to make sure of the inbox
// now. It must not be called from a handler.
func (c *Client) CatchUp(ctx context.Context) error {
	if _, err := c.current(ctx); err != nil {
		return err
	}
	return c.runCatchUp(ctx)
}

// runCatchUp queues a catch-up for the dispatcher and waits for it.
func (c *Client) runCatchUp(ctx context.Context) error {
	done := make(chan error, 1)
	c.queue.push(item{catchUp: true, done: done})
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return ErrClosed
	}
}

// catchUp runs on the dispatcher. It retries failures that a new session
// may cure, with backoff, when Options.Reconnect is set.
func (c *Client) catchUp() error {
	for attempt := 0; ; attempt++ {
		cs, err := c.current(c.ctx)
		if err != nil {
			return err
		}
		if !c.SupportsEvents() {
			return ErrNoEvents
		}
		err = c.pollAll(cs)
		var te *ToolError
		switch {
		case err == nil:
			return nil
		case c.ctx.Err() != nil:
			return ErrClosed
		case c.opts.Reconnect == nil || errors.As(err, &te):
			c.log.Error("MCPE catch-up failed: deliveries may be missing", "cursor", c.Cursor(), "error", err)
			return err
		}
		c.log.Warn("MCPE catch-up failed; retrying", "attempt", attempt+1, "error", err)
		if c.sleep(c.ctx, c.backoff(attempt)) != nil {
			return ErrClosed
		}
	}
}

// pollAll reads the inbox after pollFrom to its end, delivering each entry,
// and moves the mark there. From an empty pollFrom, it only finds where the
// inbox ends, and makes that the base.
func (c *Client) pollAll(cs *mcp.ClientSession) error {
	cursor := c.pollFrom()
	skip := cursor == ""
	for {
		ctx, cancel := context.WithTimeout(c.ctx, pollTimeout)
		res, err := callTool[mcpe.PollResult](ctx, cs, mcpe.ToolPoll, mcpe.PollRequest{Cursor: cursor, Limit: mcpe.MaxPollLimit})
		cancel()
		if err != nil {
			return err
		}
		if _, err := mcpe.ParseCursor(res.NextCursor); err != nil {
			return errors.New("events_poll answered without a valid nextCursor")
		}
		if cursor = res.NextCursor; !skip {
			for _, it := range res.Items {
				c.pollItem(it)
			}
			c.reach(cursor)
		} else if !res.HasMore {
			c.mu.Lock()
			c.base, _ = mcpe.ParseCursor(cursor)
			c.mu.Unlock()
		}
		if !res.HasMore {
			return nil
		}
	}
}

// pollFrom is the cursor a catch-up reads after: the mark, or the entry
// before it when a notification set it (notifications for more of the
// entry's subscriptions may have been lost), or the base when that is
// higher. It is empty, the server's own poll position, before a Client
// started without Options.Cursor has a base.
func (c *Client) pollFrom() string {
	if c.base < 0 && c.opts.Cursor == "" {
		return ""
	}
	from := c.mark
	if c.markSubs != nil {
		from = max(from-1, 0)
	}
	return mcpe.FormatCursor(max(from, c.base))
}

// watchStream returns a copy of t that notices when the go-sdk opens the
// standalone event stream of a session a second time: it does so by itself
// after the stream broke, and the server keeps no event store to replay
// what was sent into the broken one. The Client then catches up, ahead of
// what the new stream brings.
func (c *Client) watchStream(t *mcp.StreamableClientTransport) *mcp.StreamableClientTransport {
	return wrapHTTP(t, func(base http.RoundTripper) http.RoundTripper {
		return &streamWatch{base: base, reopened: func() {
			c.log.Warn("MCPE event stream reopened; catching up")
			c.queue.push(item{catchUp: true})
		}}
	})
}

// streamWatch counts the event streams opened by GET.
type streamWatch struct {
	base     http.RoundTripper
	opened   atomic.Int64
	reopened func()
}

func (w *streamWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" && w.opened.Add(1) > 1 {
		w.reopened()
	}
	return resp, nil
}
