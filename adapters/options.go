package adapters

import (
	"cmp"
	"errors"
	"log/slog"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// ReceiverOptions are the options every webhook receiver (github, slack,
// alertmanager) takes; each receiver's Options has these fields under the
// same names, beside its own.
type ReceiverOptions struct {
	// Publisher accepts the events; required.
	Publisher subscriptions.Publisher
	// Clock; nil is the wall clock.
	Clock clock.Clock
	// Logger; nil discards.
	Logger *slog.Logger
}

// Check returns o with its defaults filled in, or an error when it has no
// Publisher, such as "github: Options.Publisher is required".
func (o ReceiverOptions) Check(source string) (ReceiverOptions, error) {
	if o.Publisher == nil {
		return o, errors.New(source + ": Options.Publisher is required")
	}
	o.Clock = cmp.Or[clock.Clock](o.Clock, clock.Real{})
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return o, nil
}
