package app

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/internal/config"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// countSink is a live session that counts what it is sent.
type countSink struct {
	mu sync.Mutex
	n  int
}

func (s *countSink) Write(_ context.Context, msgs []realtime.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += len(msgs)
	return nil
}

// value returns the sum of the series of metric name whose labels include
// labels (the sample count of a histogram).
func value(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				sum += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				sum += m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// eventually waits, in real time, for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMetrics(t *testing.T) {
	ctx := t.Context()
	clk := clocktest.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cfg := &config.Config{
		Auth:    config.Auth{Tokens: []config.PrincipalToken{{Principal: "alice", Secret: config.Secret{Token: "alice-token"}}}},
		Metrics: config.Metrics{Enabled: true, Tokens: []config.Secret{{Token: "scrape-token"}}},
		Handlers: config.Handlers{Bash: &config.BashHandler{Sandbox: "off",
			Commands: map[string]config.BashCommand{"ok": {Path: "/bin/true"}}}},
	}
	a, err := New(ctx, Options{Config: cfg, Store: openStore(t), HTTP: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h, err := a.HTTPHandler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	reg := a.Metrics.Registry()

	sink := &countSink{}
	detach := a.Sessions.Attach("alice", sink)
	defer detach()
	if _, err := a.Service.Subscribe(ctx, "alice", mcpe.SubscribeRequest{
		Filter:  mcpe.Filter{EventTypes: []string{"deploy.*"}},
		Handler: &mcpe.HandlerSpec{Type: mcpe.HandlerBash, Command: "ok"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Service.Subscribe(ctx, "alice", mcpe.SubscribeRequest{
		Filter: mcpe.Filter{EventTypes: []string{"deploy.*"}},
		Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelScheduled},
			ScheduledDelivery: &mcpe.ScheduledDelivery{DeliverAt: clk.Now().Add(time.Hour).Format(time.RFC3339)}},
	}); err != nil {
		t.Fatal(err)
	}

	post := func(body string) int {
		t.Helper()
		resp, err := http.Post(srv.URL+"/v1/events", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Many event types: none of them may become a label.
	for _, typ := range []string{"deploy.api", "deploy.web", "deploy.db", "build.one", "build.two"} {
		if code := post(`{"type": "` + typ + `", "data": {}}`); code != http.StatusAccepted {
			t.Fatalf("POST %s = %d; want 202", typ, code)
		}
	}
	post(`{"type": "deploy.api", "data": {}, "metadata": {"sourceEventId": "d1"}}`)
	post(`{"type": "deploy.api", "data": {}, "metadata": {"sourceEventId": "d1"}}`)
	post(`not json`)
	post(`{"type": ""}`)

	for _, tt := range []struct {
		outcome string
		want    float64
	}{{"accepted", 6}, {"duplicate", 1}, {"invalid", 2}, {"busy", 0}} {
		if got := value(t, reg, "mcpe_events_total", map[string]string{"source": "ingest", "outcome": tt.outcome}); got != tt.want {
			t.Errorf("mcpe_events_total{source=ingest,outcome=%s} = %v; want %v", tt.outcome, got, tt.want)
		}
	}
	if got := value(t, reg, "mcpe_store_operation_duration_seconds", map[string]string{"op": "publish"}); got < 1 {
		t.Errorf("mcpe_store_operation_duration_seconds{op=publish} counted %v commits; want at least 1", got)
	}
	// Four deploy.* events reach the realtime subscription: notifications
	// and handler runs.
	eventually(t, "4 events/event sent", func() bool {
		return value(t, reg, "mcpe_notifications_sent_total", map[string]string{"method": mcpe.MethodEvent}) == 4
	})
	eventually(t, "4 bash runs", func() bool {
		return value(t, reg, "mcpe_handler_runs_total", map[string]string{"kind": "bash", "outcome": "ok"}) == 4
	})
	if got := value(t, reg, "mcpe_handler_run_duration_seconds", map[string]string{"kind": "bash"}); got != 4 {
		t.Errorf("mcpe_handler_run_duration_seconds{kind=bash} counted %v runs; want 4", got)
	}
	if got := value(t, reg, "mcpe_sessions", map[string]string{"transport": "stdio"}); got != 1 {
		t.Errorf("mcpe_sessions{transport=stdio} = %v; want 1", got)
	}
	for _, tt := range []struct {
		mode string
		want float64
	}{{"realtime", 1}, {"scheduled", 1}, {"cron", 0}} {
		if got := value(t, reg, "mcpe_subscriptions", map[string]string{"mode": tt.mode, "status": "active"}); got != tt.want {
			t.Errorf("mcpe_subscriptions{mode=%s,status=active} = %v; want %v", tt.mode, got, tt.want)
		}
	}
	// The fake clock runs the scheduler's timer at its due time: on time.
	clk.Advance(time.Hour + 10*time.Second)
	eventually(t, "a scheduled fire on time", func() bool {
		return value(t, reg, "mcpe_digest_fires_total", map[string]string{"channel": "scheduled", "timeliness": "on_time"}) == 1
	})
	eventually(t, "the events/batch sent", func() bool {
		return value(t, reg, "mcpe_notifications_sent_total", map[string]string{"method": mcpe.MethodBatch}) == 1
	})
	if got := value(t, reg, "mcpe_inbox_entries", nil); got != 6 {
		t.Errorf("mcpe_inbox_entries = %v; want 6 (4 events, the batch and its subscription's expiry)", got)
	}

	// Cardinality: no label names an event, a subscription or a principal.
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "go_") || strings.HasPrefix(f.GetName(), "process_") {
			continue
		}
		if n := len(f.GetMetric()); n > 30 {
			t.Errorf("%s has %d series; want a bounded few", f.GetName(), n)
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "source", "outcome", "method", "channel", "timeliness", "kind", "op", "transport", "mode", "status", "query", "le":
				default:
					t.Errorf("%s has label %q=%q; want only bounded labels", f.GetName(), l.GetName(), l.GetValue())
				}
				if strings.Contains(l.GetValue(), "deploy") || strings.Contains(l.GetValue(), "alice") {
					t.Errorf("%s has label %s=%q, an event type or principal", f.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}

	// Over HTTP, with the metrics token only.
	scrape := func(token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, token := range []string{"", "alice-token"} {
		if code, body := scrape(token); code != http.StatusUnauthorized || !strings.Contains(body, `"code":"unauthorized"`) {
			t.Errorf("GET /metrics with token %q = %d %s; want 401 with the JSON refusal", token, code, body)
		}
	}
	code, body := scrape("scrape-token")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics with the metrics token = %d", code)
	}
	for _, want := range []string{`mcpe_events_total{outcome="accepted",source="ingest"} 6`, "go_goroutines ", "process_resident_memory_bytes ", `mcpe_digest_fires_total{channel="scheduled",timeliness="on_time"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("GET /metrics does not contain %q", want)
		}
	}
	if bytes.Contains([]byte(body), []byte("deploy.")) {
		t.Error("GET /metrics names an event type")
	}
}

func TestMetricsOff(t *testing.T) {
	a, err := New(t.Context(), Options{Store: openStore(t), HTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Metrics != nil {
		t.Error("Metrics are on without metrics.enabled or metrics.addr")
	}
	h, err := a.HTTPHandler()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET /metrics with metrics off = %d; want 404", rec.Code)
	}
}
