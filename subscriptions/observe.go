package subscriptions

import (
	"context"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Observer hears what the Service does, for operators' metrics. Its methods
// are called on the paths that publish and fire: they must be cheap and must
// not block.
type Observer interface {
	// StoreOp reports one store write: op is "publish" (the group commit
	// of a batch of events) or "fire" (a chunk of digest fires); err is
	// what it returned.
	StoreOp(op string, took time.Duration, err error)
	// Fired reports one digest fire of buffered channel c that recorded a
	// delivery (or found nothing waiting): late is how long after its due
	// time it ran, and missed is true when later fires fell due meanwhile
	// and were folded into this one (the server was down or stuck).
	Fired(c mcpe.Channel, late time.Duration, missed bool)
}

// Counts is what a Store may offer operators: a count of its subscriptions
// and the size of its principals' inboxes, each read with one cheap query.
// Both stores implement it; it is an interface of its own so that a Store
// does not have to.
type Counts interface {
	// SubscriptionCounts counts the subscriptions by mode and status.
	SubscriptionCounts(ctx context.Context) ([]SubscriptionCount, error)
	// InboxSizes returns, for each principal with an inbox entry, how
	// many entries it has and when the oldest one events_poll has not
	// handed out yet was made (zero when it has handed out all of them).
	InboxSizes(ctx context.Context) ([]InboxSize, error)
}

// SubscriptionCount is how many subscriptions have a mode and a status.
type SubscriptionCount struct {
	// Mode is the subscription's buffered channel (cron or scheduled), or
	// realtime when it has none.
	Mode   mcpe.Channel
	Status mcpe.Status
	N      int64
}

// InboxSize is the state of one principal's inbox.
type InboxSize struct {
	Principal string
	Entries   int64
	// OldestUnpolled is when the oldest entry after the principal's
	// events_poll cursor was made; zero when there is none.
	OldestUnpolled time.Time
}
