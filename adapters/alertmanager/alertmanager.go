package alertmanager

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Endpoint is the path Alertmanager posts to.
const Endpoint = "/adapters/alertmanager"

// Version is the webhook payload version the adapter accepts.
const Version = "4"

// Limits on what one notification turns into.
const (
	// MaxAlerts is the most alerts one notification may carry; set
	// Alertmanager's max_alerts to at most this.
	MaxAlerts = 1000
	// MaxLabels is the most labels kept per alert.
	MaxLabels = 64
	// MaxAnnotations is the most annotations kept per alert.
	MaxAnnotations = 32
	// MaxNameBytes bounds a label or annotation name.
	MaxNameBytes = 128
	// MaxLabelValueBytes bounds a label value.
	MaxLabelValueBytes = 512
	// MaxAnnotationValueBytes bounds an annotation value.
	MaxAnnotationValueBytes = 4096
	// MaxURLBytes bounds generatorURL and externalURL.
	MaxURLBytes = 2048
)

// maxFieldBytes bounds receiver and groupKey; maxFingerprintBytes the
// fingerprint.
const (
	maxFieldBytes       = 1024
	maxFingerprintBytes = 128
)

// DefaultSeverityPriorities returns the priorities of the usual severity
// labels: critical -> critical, warning -> high, info -> low.
func DefaultSeverityPriorities() map[string]mcpe.Priority {
	return map[string]mcpe.Priority{
		"critical": mcpe.PriorityCritical,
		"warning":  mcpe.PriorityHigh,
		"info":     mcpe.PriorityLow,
	}
}

// Options configure an Adapter.
type Options struct {
	// Publisher accepts the events; required.
	Publisher subscriptions.Publisher
	// Tokens, when not empty, are the bearer tokens Alertmanager must send
	// ("Authorization: Bearer <token>", http_config.authorization in its
	// webhook_config). Nil or empty accepts requests without a token.
	Tokens *httpapi.Tokens
	// SeverityPriorities maps values of the severity label, compared
	// without regard to case, to priorities. Nil means
	// DefaultSeverityPriorities; a map given replaces it. A severity it
	// does not list, or no severity label, gives normal.
	SeverityPriorities map[string]mcpe.Priority
	// Clock stamps alerts that come without a time; nil is the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Adapter is the Alertmanager webhook receiver: an adapters.Source and the
// http.Handler of POST /adapters/alertmanager. It is safe for concurrent
// use.
type Adapter struct {
	shared     adapters.ReceiverOptions
	tokens     *httpapi.Tokens
	severities map[string]mcpe.Priority
	maxBody    int64
	catalog    []mcpe.EventType
}

var _ adapters.Source = (*Adapter)(nil)

// Validate checks the settings of o; New also requires a Publisher. An
// error is an *mcpe.InvalidError whose Field is the setting's key in the
// configuration file, relative to the adapter's section, such as
// "severityPriorities.page".
func (o *Options) Validate() error {
	_, err := severityPriorities(o.SeverityPriorities)
	return err
}

// New checks opts and returns an Adapter.
func New(opts Options) (*Adapter, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("alertmanager: %w", err)
	}
	ro, err := adapters.ReceiverOptions{Publisher: opts.Publisher, Clock: opts.Clock, Logger: opts.Logger}.Check("alertmanager")
	if err != nil {
		return nil, err
	}
	severities, _ := severityPriorities(opts.SeverityPriorities)
	a := &Adapter{
		shared:     ro,
		tokens:     opts.Tokens,
		severities: severities,
		maxBody:    adapters.DefaultMaxBodyBytes,
	}
	a.catalog = a.buildCatalog()
	return a, nil
}

// severityPriorities checks m and returns it with lower-case keys.
func severityPriorities(m map[string]mcpe.Priority) (map[string]mcpe.Priority, error) {
	return adapters.Priorities("severityPriorities", "severity", m, DefaultSeverityPriorities(), severityKey,
		"which is empty", "severities are compared without regard to case")
}

func severityKey(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// priority returns the priority of an alert with the given severity label.
func (a *Adapter) priority(severity string) mcpe.Priority {
	if p, ok := a.severities[severityKey(severity)]; ok {
		return p
	}
	return mcpe.PriorityNormal
}

// Name returns "alertmanager".
func (a *Adapter) Name() string { return "alertmanager" }
