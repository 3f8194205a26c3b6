package adapters

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
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

// Validate checks the settings every receiver shares. An error is an
// *mcpe.InvalidError whose Field is the setting's key in the configuration
// file, relative to the adapter's section, such as "maxBodyBytes".
func (o ReceiverOptions) Validate() error {
	if o.MaxBodyBytes < 0 {
		return mcpe.Invalid("maxBodyBytes", "is %d; give a positive number of bytes, or leave it out for %d", o.MaxBodyBytes, DefaultMaxBodyBytes)
	}
	return nil
}

// Check returns o with its defaults filled in, or an error that names the
// wrong field of the Options of the receiver called source, such as
// "github: Options.Publisher is required" or "github: maxBodyBytes: is -1;
// ...".
func (o ReceiverOptions) Check(source string) (ReceiverOptions, error) {
	if o.Publisher == nil {
		return o, errors.New(source + ": Options.Publisher is required")
	}
	if err := o.Validate(); err != nil {
		return o, fmt.Errorf("%s: %w", source, err)
	}
	o.MaxBodyBytes = cmp.Or(o.MaxBodyBytes, DefaultMaxBodyBytes)
	o.Clock = cmp.Or[clock.Clock](o.Clock, clock.Real{})
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return o, nil
}
