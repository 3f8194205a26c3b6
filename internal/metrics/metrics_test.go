package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// fakePublisher answers every Publish with res and err.
type fakePublisher struct {
	res subscriptions.PublishResult
	err error
}

func (p *fakePublisher) Publish(context.Context, mcpe.Event) (subscriptions.PublishResult, error) {
	return p.res, p.err
}

func TestPublisherOutcomes(t *testing.T) {
	m := New(Options{})
	fake := &fakePublisher{}
	pub := m.Publisher("github", fake)
	for _, tt := range []struct {
		res  subscriptions.PublishResult
		err  error
		want string
	}{
		{want: "accepted"},
		{res: subscriptions.PublishResult{Duplicate: true}, want: "duplicate"},
		{err: mcpe.Invalid("type", "is empty"), want: "invalid"},
		{err: subscriptions.ErrBusy, want: "busy"},
		{err: subscriptions.ErrUnavailable, want: "unavailable"},
		{err: errors.New("disk full"), want: "error"},
	} {
		fake.res, fake.err = tt.res, tt.err
		before := testutil.ToFloat64(m.events.WithLabelValues("github", tt.want))
		pub.Publish(t.Context(), mcpe.Event{Type: "x"})
		if got := testutil.ToFloat64(m.events.WithLabelValues("github", tt.want)) - before; got != 1 {
			t.Errorf("after a publish answering (%v, %v), mcpe_events_total{outcome=%q} moved by %v; want 1", tt.res.Duplicate, tt.err, tt.want, got)
		}
	}
}

func TestFiredTimeliness(t *testing.T) {
	m := New(Options{})
	m.Fired(mcpe.ChannelCron, time.Second, false)
	m.Fired(mcpe.ChannelCron, time.Minute, false)
	m.Fired(mcpe.ChannelCron, time.Hour, true)
	m.Fired(mcpe.ChannelScheduled, 0, false)
	for _, tt := range []struct {
		channel, timeliness string
		want                float64
	}{
		{"cron", "on_time", 1}, {"cron", "late", 1}, {"cron", "missed", 1}, {"scheduled", "on_time", 1}, {"scheduled", "late", 0},
	} {
		if got := testutil.ToFloat64(m.fires.WithLabelValues(tt.channel, tt.timeliness)); got != tt.want {
			t.Errorf("mcpe_digest_fires_total{channel=%q,timeliness=%q} = %v; want %v", tt.channel, tt.timeliness, got, tt.want)
		}
	}
}

func TestHandlerRanOutcomes(t *testing.T) {
	m := New(Options{})
	inv := &subscriptions.Invocation{Spec: &mcpe.HandlerSpec{Type: mcpe.HandlerWebhook}}
	m.HandlerRan(inv, subscriptions.Outcome{}, time.Millisecond)
	m.HandlerRan(inv, subscriptions.Outcome{Err: errors.New("503"), RetryIn: time.Second}, time.Millisecond)
	m.HandlerRan(inv, subscriptions.Outcome{Err: errors.New("400")}, time.Millisecond)
	m.HandlerRan(inv, subscriptions.Outcome{Err: errors.New("410"), Disable: true}, time.Millisecond)
	for _, outcome := range []string{"ok", "retry", "failed", "disabled"} {
		if got := testutil.ToFloat64(m.handlerRuns.WithLabelValues("webhook", outcome)); got != 1 {
			t.Errorf("mcpe_handler_runs_total{kind=webhook,outcome=%q} = %v; want 1", outcome, got)
		}
	}
	if n := testutil.CollectAndCount(m.handlerSeconds); n != 1 {
		t.Errorf("mcpe_handler_run_duration_seconds has %d series; want 1 (kind=webhook)", n)
	}
}

func TestNotificationsSentBoundsMethods(t *testing.T) {
	m := New(Options{})
	m.NotificationsSent([]realtime.Message{{Method: mcpe.MethodEvent}, {Method: mcpe.MethodEvent}, {Method: mcpe.MethodMissed}, {Method: "events/something_new"}})
	for method, want := range map[string]float64{mcpe.MethodEvent: 2, mcpe.MethodMissed: 1, mcpe.MethodBatch: 0, "other": 1} {
		if got := testutil.ToFloat64(m.notifications.WithLabelValues(method)); got != want {
			t.Errorf("mcpe_notifications_sent_total{method=%q} = %v; want %v", method, got, want)
		}
	}
}

// fakeSessions and fakeCounts are what a scrape reads.
type fakeSessions struct{}

func (fakeSessions) Transports() map[string]int { return map[string]int{"stdio": 1, "http": 3} }
func (fakeSessions) Lags() []realtime.Lag {
	return []realtime.Lag{{Principal: "a", Deliveries: 5, Behind: 40 * time.Second}, {Principal: "b", Deliveries: 1, Behind: time.Second}}
}
func (fakeSessions) Stats() realtime.Stats { return realtime.Stats{Sent: 10, Skipped: 2, Failed: 1} }

type fakeCounts struct {
	now time.Time
	err error
}

func (f fakeCounts) SubscriptionCounts(context.Context) ([]subscriptions.SubscriptionCount, error) {
	return []subscriptions.SubscriptionCount{{Mode: mcpe.ChannelCron, Status: mcpe.StatusActive, N: 7}}, f.err
}

func (f fakeCounts) InboxSizes(context.Context) ([]subscriptions.InboxSize, error) {
	return []subscriptions.InboxSize{
		{Principal: "alice", Entries: 10, OldestUnpolled: f.now.Add(-time.Minute)},
		{Principal: "bob", Entries: 5},
	}, f.err
}

func TestScrape(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name       string
		principals bool
		want       string
	}{
		{name: "totals", want: `
# HELP mcpe_inbox_entries Entries kept in inboxes for events_poll (per principal when metrics.principalLabel is on).
# TYPE mcpe_inbox_entries gauge
mcpe_inbox_entries 15
# HELP mcpe_inbox_oldest_unpolled_age_seconds Age of the oldest inbox entry that events_poll has not handed out yet (per principal when metrics.principalLabel is on; otherwise the oldest of all); 0 when there is none.
# TYPE mcpe_inbox_oldest_unpolled_age_seconds gauge
mcpe_inbox_oldest_unpolled_age_seconds 60
`},
		{name: "by principal", principals: true, want: `
# HELP mcpe_inbox_entries Entries kept in inboxes for events_poll (per principal when metrics.principalLabel is on).
# TYPE mcpe_inbox_entries gauge
mcpe_inbox_entries{principal="alice"} 10
mcpe_inbox_entries{principal="bob"} 5
# HELP mcpe_inbox_oldest_unpolled_age_seconds Age of the oldest inbox entry that events_poll has not handed out yet (per principal when metrics.principalLabel is on; otherwise the oldest of all); 0 when there is none.
# TYPE mcpe_inbox_oldest_unpolled_age_seconds gauge
mcpe_inbox_oldest_unpolled_age_seconds{principal="alice"} 60
mcpe_inbox_oldest_unpolled_age_seconds{principal="bob"} 0
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Options{Principals: tt.principals, Clock: clocktest.NewFake(now)})
			m.WatchSessions(fakeSessions{})
			m.WatchStore(fakeCounts{now: now})
			if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(tt.want), "mcpe_inbox_entries", "mcpe_inbox_oldest_unpolled_age_seconds"); err != nil {
				t.Error(err)
			}
			const sessions = `
# HELP mcpe_session_lag_seconds How long ago the oldest delivery not yet sent to the most lagging live session was made (0 when none is behind).
# TYPE mcpe_session_lag_seconds gauge
mcpe_session_lag_seconds 40
# HELP mcpe_sessions Live sessions, by transport (stdio, http).
# TYPE mcpe_sessions gauge
mcpe_sessions{transport="http"} 3
mcpe_sessions{transport="stdio"} 1
# HELP mcpe_sessions_behind Live sessions that have not been sent every delivery made for their principal yet.
# TYPE mcpe_sessions_behind gauge
mcpe_sessions_behind 2
# HELP mcpe_sessions_behind_deliveries Deliveries made and not yet sent, summed over the live sessions.
# TYPE mcpe_sessions_behind_deliveries gauge
mcpe_sessions_behind_deliveries 6
# HELP mcpe_notifications_skipped_total Deliveries a live session was not sent, because retention removed them; it was sent events/missed saying where to poll from.
# TYPE mcpe_notifications_skipped_total counter
mcpe_notifications_skipped_total 2
`
			if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(sessions), "mcpe_sessions", "mcpe_sessions_behind", "mcpe_sessions_behind_deliveries", "mcpe_session_lag_seconds", "mcpe_notifications_skipped_total"); err != nil {
				t.Error(err)
			}
			if n := testutil.CollectAndCount(&scrape{m: m}, "mcpe_subscriptions"); n != 9 {
				t.Errorf("mcpe_subscriptions has %d series; want 9 (3 modes by 3 statuses, zeros included)", n)
			}
		})
	}
}

func TestScrapeStoreFailing(t *testing.T) {
	m := New(Options{})
	m.WatchStore(fakeCounts{err: errors.New("database is locked")})
	if _, err := m.Registry().Gather(); err != nil {
		t.Fatalf("Gather with a failing store: %v; want the other metrics", err)
	}
	for _, q := range []string{"subscriptions", "inbox"} {
		if got := testutil.ToFloat64(m.scrapeErrors.WithLabelValues(q)); got != 1 {
			t.Errorf("mcpe_metrics_store_errors_total{query=%q} = %v; want 1", q, got)
		}
	}
}

func TestHandlerToken(t *testing.T) {
	m := New(Options{})
	srv := httptest.NewServer(m.Handler(httpapi.NewTokens(map[string]string{"scrape-secret": "metrics"})))
	defer srv.Close()
	for _, tt := range []struct {
		name, method, token string
		want                int
	}{
		{"no token", http.MethodGet, "", http.StatusUnauthorized},
		{"wrong token", http.MethodGet, "nope", http.StatusUnauthorized},
		{"token", http.MethodGet, "scrape-secret", http.StatusOK},
		{"POST", http.MethodPost, "scrape-secret", http.StatusMethodNotAllowed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL+"/metrics", nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%s /metrics = %d; want %d", tt.method, resp.StatusCode, tt.want)
			}
			if tt.want == http.StatusUnauthorized {
				if diff := cmp.Diff(`Bearer realm="mcpe-server"`, strings.Split(resp.Header.Get("WWW-Authenticate"), ",")[0]); diff != "" {
					t.Errorf("WWW-Authenticate mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}
