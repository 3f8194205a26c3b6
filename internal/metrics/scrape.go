package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// scrape collects, at each scrape, what is read rather than counted: the
// live sessions, and from the store the subscriptions and inboxes.
type scrape struct {
	m *Metrics
}

var (
	sessionsDesc         = prometheus.NewDesc("mcpe_sessions", "Live sessions, by transport (stdio, http).", []string{"transport"}, nil)
	behindDesc           = prometheus.NewDesc("mcpe_sessions_behind", "Live sessions that have not been sent every delivery made for their principal yet.", nil, nil)
	behindDeliveriesDesc = prometheus.NewDesc("mcpe_sessions_behind_deliveries", "Deliveries made and not yet sent, summed over the live sessions.", nil, nil)
	lagDesc              = prometheus.NewDesc("mcpe_session_lag_seconds", "How long ago the oldest delivery not yet sent to the most lagging live session was made (0 when none is behind).", nil, nil)
	skippedDesc          = prometheus.NewDesc("mcpe_notifications_skipped_total", "Deliveries a live session was not sent, because retention removed them; it was sent events/missed saying where to poll from.", nil, nil)
	givenUpDesc          = prometheus.NewDesc("mcpe_sessions_given_up_total", "Live sessions given up because they could not be written to for 10 seconds (the inbox keeps what they were owed).", nil, nil)
	subscriptionsDesc    = prometheus.NewDesc("mcpe_subscriptions", "Subscriptions kept, by mode (realtime, cron, scheduled) and status (active, paused, expired).", []string{"mode", "status"}, nil)
)

// inboxDescs are the inbox gauges, with a principal label or without.
func (s *scrape) inboxDescs() (entries, oldest, principals *prometheus.Desc) {
	var labels []string
	if s.m.opts.Principals {
		labels = []string{"principal"}
	}
	entries = prometheus.NewDesc("mcpe_inbox_entries", "Entries kept in inboxes for events_poll (per principal when metrics.principalLabel is on).", labels, nil)
	oldest = prometheus.NewDesc("mcpe_inbox_oldest_unpolled_age_seconds", "Age of the oldest inbox entry that events_poll has not handed out yet (per principal when metrics.principalLabel is on; otherwise the oldest of all); 0 when there is none.", labels, nil)
	principals = prometheus.NewDesc("mcpe_inbox_principals", "Principals with at least one inbox entry.", nil, nil)
	return entries, oldest, principals
}

func (s *scrape) Describe(ch chan<- *prometheus.Desc) {
	entries, oldest, principals := s.inboxDescs()
	for _, d := range []*prometheus.Desc{sessionsDesc, behindDesc, behindDeliveriesDesc, lagDesc, skippedDesc, givenUpDesc, subscriptionsDesc, entries, oldest, principals} {
		ch <- d
	}
}

func (s *scrape) Collect(ch chan<- prometheus.Metric) {
	s.m.mu.Lock()
	sessions, counts := s.m.sessions, s.m.counts
	s.m.mu.Unlock()
	if sessions != nil {
		s.collectSessions(ch, sessions)
	}
	if counts != nil {
		ctx, cancel := context.WithTimeout(context.Background(), StoreTimeout)
		defer cancel()
		s.collectStore(ctx, ch, counts)
	}
}

func (s *scrape) collectSessions(ch chan<- prometheus.Metric, sessions Sessions) {
	byTransport := sessions.Transports()
	for _, t := range []string{"stdio", "http"} {
		if _, ok := byTransport[t]; !ok {
			byTransport[t] = 0
		}
	}
	for t, n := range byTransport {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(n), t)
	}
	var behind, deliveries int64
	var lag float64
	for _, l := range sessions.Lags() {
		behind++
		deliveries += l.Deliveries
		lag = max(lag, l.Behind.Seconds())
	}
	ch <- prometheus.MustNewConstMetric(behindDesc, prometheus.GaugeValue, float64(behind))
	ch <- prometheus.MustNewConstMetric(behindDeliveriesDesc, prometheus.GaugeValue, float64(deliveries))
	ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, lag)
	st := sessions.Stats()
	ch <- prometheus.MustNewConstMetric(skippedDesc, prometheus.CounterValue, float64(st.Skipped))
	ch <- prometheus.MustNewConstMetric(givenUpDesc, prometheus.CounterValue, float64(st.Failed))
}

// statuses and modes are reported even at zero, so that dashboards and
// alerts find every series.
var (
	modes    = []mcpe.Channel{mcpe.ChannelRealtime, mcpe.ChannelCron, mcpe.ChannelScheduled}
	statuses = []mcpe.Status{mcpe.StatusActive, mcpe.StatusPaused, mcpe.StatusExpired}
)

func (s *scrape) collectStore(ctx context.Context, ch chan<- prometheus.Metric, counts subscriptions.Counts) {
	if subs, err := counts.SubscriptionCounts(ctx); err != nil {
		s.m.scrapeErrors.WithLabelValues("subscriptions").Inc()
		s.m.opts.Logger.Warn("metrics: count subscriptions", "error", err)
	} else {
		n := make(map[[2]string]int64, len(modes)*len(statuses))
		for _, m := range modes {
			for _, st := range statuses {
				n[[2]string{string(m), string(st)}] = 0
			}
		}
		for _, c := range subs {
			n[[2]string{string(c.Mode), string(c.Status)}] += c.N
		}
		for k, v := range n {
			ch <- prometheus.MustNewConstMetric(subscriptionsDesc, prometheus.GaugeValue, float64(v), k[0], k[1])
		}
	}
	sizes, err := counts.InboxSizes(ctx)
	if err != nil {
		s.m.scrapeErrors.WithLabelValues("inbox").Inc()
		s.m.opts.Logger.Warn("metrics: read inbox sizes", "error", err)
		return
	}
	entriesDesc, oldestDesc, principalsDesc := s.inboxDescs()
	now := s.m.opts.Clock.Now()
	ch <- prometheus.MustNewConstMetric(principalsDesc, prometheus.GaugeValue, float64(len(sizes)))
	var total int64
	var oldest float64
	for _, in := range sizes {
		age := 0.0
		if !in.OldestUnpolled.IsZero() {
			age = max(now.Sub(in.OldestUnpolled).Seconds(), 0)
		}
		if s.m.opts.Principals {
			ch <- prometheus.MustNewConstMetric(entriesDesc, prometheus.GaugeValue, float64(in.Entries), in.Principal)
			ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age, in.Principal)
			continue
		}
		total += in.Entries
		oldest = max(oldest, age)
	}
	if !s.m.opts.Principals {
		ch <- prometheus.MustNewConstMetric(entriesDesc, prometheus.GaugeValue, float64(total))
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, oldest)
	}
}
