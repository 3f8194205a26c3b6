package slack

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Endpoint is the path of the Events API Request URL.
const Endpoint = "/adapters/slack"

// The headers Slack sends with every request, and the one an answer may
// carry.
const (
	// HeaderSignature carries "v0=" and the hex HMAC-SHA256 of the request.
	HeaderSignature = "X-Slack-Signature"
	// HeaderTimestamp carries the request's time in Unix seconds.
	HeaderTimestamp = "X-Slack-Request-Timestamp"
	// HeaderRetryNum counts Slack's retries of an event (1 to 3).
	HeaderRetryNum = "X-Slack-Retry-Num"
	// HeaderRetryReason says why Slack retries, such as "http_timeout".
	HeaderRetryReason = "X-Slack-Retry-Reason"
	// HeaderNoRetry, set to "1" on an answer, asks Slack not to retry a
	// request that failed: the adapter sets it when a retry would fail
	// the same way.
	HeaderNoRetry = "X-Slack-No-Retry"
)

// Tolerance is how far a request's timestamp may be from the
// server's clock, in either direction, as Slack recommends.
const Tolerance = 5 * time.Minute

// Limits on what one event keeps of Slack's payload.
const (
	// MaxTextBytes bounds text and previous_text; a longer text is cut and
	// data.truncated is true.
	MaxTextBytes = 4096
	// MaxFiles is the most files listed for a message.
	MaxFiles = 20
	// MaxAttachments is the most legacy attachments summarised for a
	// message.
	MaxAttachments = 5
	// MaxAttachmentTextBytes bounds each text of an attachment.
	MaxAttachmentTextBytes = 1024
	// MaxEventBytes bounds the copy of an event of a type the adapter has
	// no mapping for (data.event).
	MaxEventBytes = 8192
	// MaxEventDepth is how deeply nested objects and arrays of that copy
	// may be.
	MaxEventDepth = 4
)

// maxIDBytes bounds IDs and timestamps (users, channels, "ts"), which
// Slack keeps short; maxNameBytes bounds names (channels, files, bots);
// maxChallengeBytes bounds a url_verification challenge.
const (
	maxIDBytes        = 128
	maxNameBytes      = 256
	maxChallengeBytes = 1024
)

// Options configure an Adapter.
type Options struct {
	// Publisher accepts the events; required.
	Publisher subscriptions.Publisher
	// SigningSecret is the Slack app's Signing Secret (Basic Information,
	// App Credentials); required. Every request must be signed with it.
	SigningSecret []byte
	// Clock checks request timestamps and stamps events whose event_time
	// is unusable; nil is the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Adapter is the Slack Events API receiver: an adapters.Source and the
// http.Handler of POST /adapters/slack. It is safe for concurrent use.
type Adapter struct {
	shared    adapters.ReceiverOptions
	secret    []byte
	tolerance time.Duration
	maxBody   int64
	catalog   []mcpe.EventType
}

var _ adapters.Source = (*Adapter)(nil)

// Validate checks the settings of o; New also requires a Publisher. An
// error is an *mcpe.InvalidError whose Field is the setting's key in the
// configuration file, relative to the adapter's section, such as
// "signingSecret".
func (o *Options) Validate() error {
	if len(o.SigningSecret) == 0 {
		return mcpe.Invalid("signingSecret", "is required; copy the Signing Secret from the app's Basic Information page at https://api.slack.com/apps")
	}
	if s := string(o.SigningSecret); strings.TrimSpace(s) != s {
		return mcpe.Invalid("signingSecret", "starts or ends with white space, which would make every signature wrong; copy the Signing Secret without spaces or line breaks")
	}
	return nil
}

// New checks opts and returns an Adapter.
func New(opts Options) (*Adapter, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	ro, err := adapters.ReceiverOptions{Publisher: opts.Publisher, Clock: opts.Clock, Logger: opts.Logger}.Check("slack")
	if err != nil {
		return nil, err
	}
	a := &Adapter{
		shared:    ro,
		secret:    append([]byte(nil), opts.SigningSecret...),
		tolerance: Tolerance,
		maxBody:   adapters.DefaultMaxBodyBytes,
	}
	a.catalog = a.buildCatalog()
	return a, nil
}

// Name returns "slack".
func (a *Adapter) Name() string { return "slack" }
