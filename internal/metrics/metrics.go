// Package metrics exposes the server's Prometheus metrics on GET /metrics.
// It is the one package that imports the Prometheus client: the domain
// reports through small hooks (subscriptions.Observer, subscriptions.Counts,
// realtime.Options.Sent, handlers.Options.Ran) that internal/app connects to
// a Metrics. Labels are bounded: no event type, subscription ID or session
// ID is ever a label, and principals only when the operator asks
// (Options.Principals).
package metrics

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Bounds of a scrape.
const (
	// StoreTimeout bounds the store queries of one scrape.
	StoreTimeout = 2 * time.Second
	// LateAfter is how long after its due time a digest fire counts as
	// late rather than on time.
	LateAfter = 5 * time.Second
)

// Options configure Metrics. The zero value is ready to use.
type Options struct {
	// Principals labels the inbox gauges with each principal; false
	// reports totals only. Turn it on only for a bounded set of
	// principals (bearer tokens), not for one principal per HTTP session.
	Principals bool
	// Clock gives the ages of inbox entries; nil is the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Sessions is what Metrics reads of the live sessions at scrape time
// (*realtime.Registry implements it).
type Sessions interface {
	Transports() map[string]int
	Lags() []realtime.Lag
	Stats() realtime.Stats
}

// Metrics holds the server's metrics in a registry of its own.
type Metrics struct {
	opts Options
	reg  *prometheus.Registry

	events         *prometheus.CounterVec
	notifications  *prometheus.CounterVec
	fires          *prometheus.CounterVec
	fireDelay      *prometheus.HistogramVec
	handlerRuns    *prometheus.CounterVec
	handlerSeconds *prometheus.HistogramVec
	storeSeconds   *prometheus.HistogramVec
	storeErrors    *prometheus.CounterVec
	scrapeErrors   *prometheus.CounterVec

	mu       sync.Mutex // guards the fields below
	sessions Sessions
	counts   subscriptions.Counts
}

// New returns Metrics with every metric registered, the Go runtime and
// process collectors included.
func New(opts Options) *Metrics {
	opts.Clock = cmp.Or[clock.Clock](opts.Clock, clock.Real{})
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	m := &Metrics{opts: opts, reg: prometheus.NewRegistry()}
	m.events = m.counter("mcpe_events_total", []string{"source", "outcome"}, "Events received, by source (ingest, github, slack, alertmanager, mcp) and outcome: accepted, duplicate (accepted before, not routed again), or refused as invalid, busy (429: a live session is a full backlog behind), unavailable (503: the store cannot keep events) or error.")
	m.notifications = m.counter("mcpe_notifications_sent_total", []string{"method"}, "Notifications written to live sessions, by method (events/event, events/batch, events/missed, events/subscription_expired).")
	m.fires = m.counter("mcpe_digest_fires_total", []string{"channel", "timeliness"}, "Fires of cron and scheduled subscriptions, by channel and timeliness: on_time (within 5s of the due time), late, or missed (later fires fell due meanwhile and were folded into this one).")
	m.fireDelay = m.histogram("mcpe_digest_fire_delay_seconds", []string{"channel"}, []float64{0.01, 0.1, 0.5, 1, 5, 30, 60, 300, 3600}, "How long after its due time a digest fired, by channel.")
	m.handlerRuns = m.counter("mcpe_handler_runs_total", []string{"kind", "outcome"}, "Handler runs, by kind (bash, webhook, agent) and outcome: ok, retry (failed, runs again), failed (for good) or disabled (the handler was turned off, e.g. a webhook answered 410).")
	m.handlerSeconds = m.histogram("mcpe_handler_run_duration_seconds", []string{"kind"}, []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 300, 600}, "How long handler runs took, by kind.")
	m.storeSeconds = m.histogram("mcpe_store_operation_duration_seconds", []string{"op"}, []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5}, "Latency of store writes, by operation: publish (the group commit of a batch of events) and fire (a chunk of digest fires).")
	m.storeErrors = m.counter("mcpe_store_operation_errors_total", []string{"op"}, "Store writes that failed, by operation.")
	m.scrapeErrors = m.counter("mcpe_metrics_store_errors_total", []string{"query"}, "Store queries of a scrape that failed or timed out, by query (subscriptions, inbox); the gauges they feed are left out of that scrape.")
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), &scrape{m: m})
	// Series that alerts compare against exist from the start, at zero.
	for _, op := range []string{"publish", "fire"} {
		m.storeErrors.WithLabelValues(op)
	}
	for _, method := range methods {
		m.notifications.WithLabelValues(method)
	}
	return m
}

// counter registers a counter vector of name with labels and help.
func (m *Metrics) counter(name string, labels []string, help string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.reg.MustRegister(c)
	return c
}

// histogram registers a histogram vector of name with labels, buckets and
// help.
func (m *Metrics) histogram(name string, labels []string, buckets []float64, help string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	m.reg.MustRegister(h)
	return h
}

// Registry returns the registry the metrics are kept in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format (or
// OpenMetrics, when asked). With tokens, a request must carry one of them
// as a bearer token, and is refused with the JSON refusal of
// internal/httpapi otherwise.
func (m *Metrics) Handler(tokens *httpapi.Tokens) http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		ErrorLog:          slog.NewLogLogger(m.opts.Logger.Handler(), slog.LevelWarn),
		EnableOpenMetrics: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			httpapi.WriteError(w, http.StatusMethodNotAllowed, httpapi.CodeMethodNotAllowed, "use GET, not "+r.Method)
			return
		}
		if tokens.Len() > 0 {
			if _, ok := tokens.Authenticate(w, r, "a metrics token"); !ok {
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// WatchSessions makes each scrape read the live sessions from s.
func (m *Metrics) WatchSessions(s Sessions) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions = s
}

// WatchStore makes each scrape count subscriptions and inboxes with c.
func (m *Metrics) WatchStore(c subscriptions.Counts) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts = c
}

// Publisher returns p, counting what it is given by outcome under source.
func (m *Metrics) Publisher(source string, p subscriptions.Publisher) subscriptions.Publisher {
	for _, o := range outcomes {
		m.events.WithLabelValues(source, o)
	}
	return publisher{p: p, accepted: m.events.WithLabelValues(source, "accepted"),
		duplicate: m.events.WithLabelValues(source, "duplicate"), source: source, m: m}
}

// outcomes are the values of mcpe_events_total's outcome label.
var outcomes = []string{"accepted", "duplicate", "invalid", "busy", "unavailable", "error"}

type publisher struct {
	p                   subscriptions.Publisher
	accepted, duplicate prometheus.Counter
	source              string
	m                   *Metrics
}

func (p publisher) Publish(ctx context.Context, ev mcpe.Event) (subscriptions.PublishResult, error) {
	res, err := p.p.Publish(ctx, ev)
	switch {
	case err == nil && res.Duplicate:
		p.duplicate.Inc()
	case err == nil:
		p.accepted.Inc()
	default:
		p.m.events.WithLabelValues(p.source, refusal(err)).Inc()
	}
	return res, err
}

// refusal names the outcome of a publish error.
func refusal(err error) string {
	var inv *mcpe.InvalidError
	switch {
	case errors.As(err, &inv):
		return "invalid"
	case errors.Is(err, subscriptions.ErrBusy):
		return "busy"
	case errors.Is(err, subscriptions.ErrUnavailable):
		return "unavailable"
	default:
		return "error"
	}
}

// Refused counts an event source refused before it was published (a body
// that is not JSON, too large, or not an event) as invalid.
func (m *Metrics) Refused(source string) {
	m.events.WithLabelValues(source, "invalid").Inc()
}

// methods are the notification methods a live session is sent; any other
// counts as "other", so that the label stays bounded.
var methods = []string{mcpe.MethodEvent, mcpe.MethodBatch, mcpe.MethodMissed, mcpe.MethodSubscriptionExpired}

// NotificationsSent counts notifications written to a live session
// (realtime.Options.Sent).
func (m *Metrics) NotificationsSent(msgs []realtime.Message) {
	for _, msg := range msgs {
		method := msg.Method
		if !slices.Contains(methods, method) {
			method = "other"
		}
		m.notifications.WithLabelValues(method).Inc()
	}
}

// HandlerRan counts a handler run and its duration (handlers.Options.Ran).
func (m *Metrics) HandlerRan(inv *subscriptions.Invocation, o subscriptions.Outcome, took time.Duration) {
	kind := string(inv.Spec.Type)
	outcome := "ok"
	switch {
	case o.Err == nil:
	case o.Disable:
		outcome = "disabled"
	case o.RetryIn > 0:
		outcome = "retry"
	default:
		outcome = "failed"
	}
	m.handlerRuns.WithLabelValues(kind, outcome).Inc()
	m.handlerSeconds.WithLabelValues(kind).Observe(took.Seconds())
}

var _ subscriptions.Observer = (*Metrics)(nil)

// StoreOp implements subscriptions.Observer.
func (m *Metrics) StoreOp(op string, took time.Duration, err error) {
	m.storeSeconds.WithLabelValues(op).Observe(took.Seconds())
	if err != nil {
		m.storeErrors.WithLabelValues(op).Inc()
	}
}

// Fired implements subscriptions.Observer.
func (m *Metrics) Fired(c mcpe.Channel, late time.Duration, missed bool) {
	timeliness := "on_time"
	switch {
	case missed:
		timeliness = "missed"
	case late > LateAfter:
		timeliness = "late"
	}
	m.fires.WithLabelValues(string(c), timeliness).Inc()
	m.fireDelay.WithLabelValues(string(c)).Observe(late.Seconds())
}
