package handlers

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Defaults for Options.
const (
	DefaultConcurrency = 32
	DefaultRunTimeout  = 10 * time.Minute
)

// Jobs is the part of subscriptions.Store the runner uses.
type Jobs interface {
	DueJobs(ctx context.Context, now time.Time, limit int, q subscriptions.JobQuery) ([]*subscriptions.Invocation, error)
	FinishJobs(ctx context.Context, done []subscriptions.JobDone) error
	NextJobDue(ctx context.Context, q subscriptions.JobQuery) (time.Time, bool, error)
	ReleaseJobs(ctx context.Context, ids []string, now time.Time) error
}

// Options configure a Runner.
type Options struct {
	// Jobs is the store; required.
	Jobs Jobs
	// Handlers run each type of handler; a job whose type has none fails.
	Handlers map[mcpe.HandlerType]subscriptions.Handler
	// Labels, when set, gives each run its subscription's label.
	Labels func(subscriptionID string) string
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Concurrency is the number of workers, and so bounds the runs in
	// progress; zero means DefaultConcurrency. Each handler may bound its
	// own runs further.
	Concurrency int
	// RunTimeout is a ceiling on one run, above the handlers' own
	// timeouts; zero means DefaultRunTimeout.
	RunTimeout time.Duration
	// Ran, when set, is called after each run whose outcome is recorded,
	// with how long the handler took, for metrics. It must be cheap and
	// must not block.
	Ran func(inv *subscriptions.Invocation, o subscriptions.Outcome, took time.Duration)
}

// Validate checks the settings of o. An error is an *mcpe.InvalidError
// whose Field is the setting's key in the configuration file, relative to
// the handlers section, such as "concurrency".
func (o *Options) Validate() error {
	if o.Concurrency < 0 {
		return mcpe.Invalid("concurrency", "is %d; give a positive number, or leave it out for %d", o.Concurrency, DefaultConcurrency)
	}
	if t := o.RunTimeout; t != 0 && (t < time.Second || t > 24*time.Hour) {
		return mcpe.Invalid("runTimeout", "is %v; give a duration from 1s to 24h, or leave it out for %v", t, DefaultRunTimeout)
	}
	return nil
}
