package adapters

import (
	"errors"
	"fmt"
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
	// MaxBodyBytes bounds a request body; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Clock; nil is the wall clock.
	Clock clock.Clock
	// Logger; nil discards.
	Logger *slog.Logger
}

// Check returns o with its defaults filled in, or an error that names the
// wrong field of the Options of the receiver called source, such as
// "github: Options.Publisher is required".
func (o ReceiverOptions) Check(source string) (ReceiverOptions, error) {
	if o.Publisher == nil {
		return o, errors.New(source + ": Options.Publisher is required")
	}
	if o.MaxBodyBytes < 0 {
		return o, fmt.Errorf("%s: Options.MaxBodyBytes is %d; it must be positive, or zero for %d", source, o.MaxBodyBytes, DefaultMaxBodyBytes)
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}
