package subscriptions

// Presence tells whether a principal has a live session.
type Presence interface {
	Connected(principal string) bool
}

// Deliverer sends inbox entries to their owners' live sessions as MCPE
// notifications (delivery/realtime). Deliver must not block.
type Deliverer interface {
	Deliver(entries []InboxEntry)
}
