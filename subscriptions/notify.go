package subscriptions

import "github.com/mcpe-server/mcpe-server/mcpe"

// Presence tells whether a principal has a live session.
type Presence interface {
	Connected(principal string) bool
}

// Deliverer sends inbox entries to their owners' live sessions as MCPE
// notifications (delivery/realtime). Neither method may block.
type Deliverer interface {
	// Deliver hands over entries just committed, in commit order.
	Deliver(entries []InboxEntry)
	// Replay hands over, to principal's live sessions, entries committed
	// earlier (an event the operator sends again), to send before what is
	// delivered after them.
	Replay(principal string, entries []InboxEntry)
}

// Backlog is what the live sessions of principals are owed and have not
// been sent yet (delivery/realtime).
type Backlog interface {
	// Full reports whether a live session of principal is owed as much as
	// it may be: events for principal are then refused with ErrBusy until
	// it catches up.
	Full(principal string) bool
	// Cursors returns, for each principal with a live session, the inbox
	// sequence number its session furthest behind has been sent up to:
	// retention keeps what follows it.
	Cursors() map[string]int64
}

// Rendering returns the label of an active subscription and its delivery,
// whose Shape cuts the events it delivers; zero values for one not active
// (paused, removed), whose deliveries then go out whole.
func (s *Service) Rendering(id string) (label string, d mcpe.Delivery) {
	if e := s.index.Get(id); e != nil {
		return e.Label, e.Delivery
	}
	return "", mcpe.Delivery{}
}
