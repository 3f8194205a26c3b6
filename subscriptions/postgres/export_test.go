package postgres

import (
	"cmp"
	"context"
	"time"

	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// ChangesKept is how long a subscription change stays readable by the
// other processes sharing the database (subscriptions.Shared).
const ChangesKept = storecore.ChangesKept

// GatherAfter is how long a publish waits for its principals' rows before
// the next gathers what arrives meanwhile.
const GatherAfter = gatherAfter

// Options are what tests set on a Store: the most connections its pool
// opens (zero: pgx's default) and how often it checks that the database
// answers (zero: every five seconds).
type Options struct {
	MaxConns    int32
	HealthEvery time.Duration
}

// OpenWith is Open with opts; nil means Open's.
func OpenWith(ctx context.Context, rawURL string, opts *Options) (*Store, error) {
	o := cmp.Or(opts, &Options{})
	return open(ctx, rawURL, o.MaxConns, o.HealthEvery)
}
