package sqlite

import (
	"context"
	"time"

	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// ChangesKept is how long a subscription change stays readable by the
// other processes sharing the store (subscriptions.Shared).
const ChangesKept = storecore.ChangesKept

// Options are what tests set on a Store: the WAL size, in bytes, past
// which a checkpoint copies it back and truncates it, and how often the
// WAL is checkpointed and the database's files checked; zero keeps Open's.
type Options struct {
	WALLimit   int64
	CheckEvery time.Duration
}

// OpenWith is Open with opts; nil means Open's.
func OpenWith(ctx context.Context, path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	return open(ctx, path, options{walLimit: o.WALLimit, checkEvery: o.CheckEvery})
}
