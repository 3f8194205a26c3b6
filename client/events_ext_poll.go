package client

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultNextPoll is the wait of a poll loop whose server asks for none.
const DefaultNextPoll = 5 * time.Second

// PollLoop describes a loop of events/poll for one subscription; see
// Client.RunPoll.
type PollLoop struct {
	// Request names the subscription. Its Cursor is where the loop starts:
	// a cursor saved by OnCursor on an earlier run, or nil to subscribe
	// now and see what happens from then on.
	Request EventsPollRequest
	// OnEvent handles one occurrence; required. An error stops the loop
	// with that error, and the page it was in is not acknowledged: the
	// cursor saved last is still before it.
	OnEvent func(ctx context.Context, o Occurrence) error
	// OnCursor is called with each new cursor once the events before it
	// were handled, to persist it; truncated says that events were lost
	// before it (retention, or a cursor the server no longer knows). An
	// error stops the loop. Nil keeps the cursor in memory only.
	OnCursor func(ctx context.Context, cursor string, truncated bool) error
	// MinInterval is the shortest wait between polls that drained
	// everything, whatever nextPollMs says; zero means none. MaxInterval
	// is the longest; zero means no bound.
	MinInterval, MaxInterval time.Duration
}

func (l *PollLoop) validate() error {
	switch {
	case l.OnEvent == nil:
		return errors.New("client: PollLoop.OnEvent is required")
	case l.MinInterval < 0:
		return fmt.Errorf("client: PollLoop.MinInterval is %v; give a positive duration, or zero", l.MinInterval)
	case l.MaxInterval < 0:
		return fmt.Errorf("client: PollLoop.MaxInterval is %v; give a positive duration, or zero", l.MaxInterval)
	case l.MaxInterval > 0 && l.MaxInterval < l.MinInterval:
		return fmt.Errorf("client: PollLoop.MaxInterval (%v) is less than PollLoop.MinInterval (%v)", l.MaxInterval, l.MinInterval)
	}
	return l.Request.validate()
}

// maxNextPollMs bounds the wait a server's nextPollMs asks for (a day):
// a larger one is taken as that.
const maxNextPollMs = 24 * 60 * 60 * 1000

// RunPoll polls one subscription with events/poll until ctx ends (it then
// returns ctx.Err()), OnEvent or OnCursor fails, or the server refuses a
// poll (a JSON-RPC error, such as an unknown event type). It polls again
// at once while the server says hasMore and the cursor moves, and
// otherwise waits nextPollMs
// (DefaultNextPoll when the server gives none), within MinInterval and
// MaxInterval. A poll that fails for the connection is retried with the
// Client's backoff, over the new session when Options.Reconnect replaces
// it, from the last cursor: no event is skipped, and none is handled
// twice unless OnEvent failed. Without Options.Reconnect, the end of the
// session ends the loop (ErrSessionEnded). It returns the last cursor
// reached.
func (c *Client) RunPoll(ctx context.Context, loop PollLoop) (cursor string, err error) {
	if err := loop.validate(); err != nil {
		return "", err
	}
	req := loop.Request
	if req.Cursor != nil {
		cursor = *req.Cursor
	}
	failures := 0
	for {
		cs, err := c.current(ctx)
		if err != nil {
			return cursor, err
		}
		res, err := pollOnce(ctx, cs, req)
		if err != nil {
			if ctx.Err() != nil {
				return cursor, ctx.Err()
			}
			if isRefusal(err) {
				return cursor, err
			}
			c.log.Warn("events/poll failed; retrying", "name", req.Name, "attempt", failures+1, "error", err)
			if err := c.sleep(ctx, c.backoff(failures)); err != nil {
				return cursor, err
			}
			failures++
			continue
		}
		failures = 0
		for _, o := range res.Events {
			if err := loop.OnEvent(ctx, o); err != nil {
				return cursor, err
			}
		}
		changed := req.Cursor == nil || *req.Cursor != res.Cursor || res.Truncated
		cursor = res.Cursor
		req.Cursor = &cursor
		if changed && loop.OnCursor != nil {
			if err := loop.OnCursor(ctx, cursor, res.Truncated); err != nil {
				return cursor, err
			}
		}
		// More at once, but only when the cursor moved: a server that says
		// hasMore without moving it would make the loop spin.
		if res.HasMore && changed {
			continue
		}
		wait := DefaultNextPoll
		if res.NextPollMs > 0 {
			wait = time.Duration(min(res.NextPollMs, maxNextPollMs)) * time.Millisecond
		}
		wait = max(wait, loop.MinInterval)
		if loop.MaxInterval > 0 {
			wait = min(wait, loop.MaxInterval)
		}
		if err := c.sleep(ctx, wait); err != nil {
			return cursor, err
		}
	}
}
