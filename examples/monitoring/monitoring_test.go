// Package monitoring_test checks the example Prometheus rules and Grafana
// dashboard against the metrics the server exports.
package monitoring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/internal/metrics"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// rules is the shape of a Prometheus rule file.
type rules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type sessions struct{}

func (sessions) Transports() map[string]int { return map[string]int{"stdio": 1} }
func (sessions) Lags() []realtime.Lag       { return nil }
func (sessions) Stats() realtime.Stats      { return realtime.Stats{} }

type counts struct{}

func (counts) SubscriptionCounts(context.Context) ([]subscriptions.SubscriptionCount, error) {
	return nil, nil
}
func (counts) InboxSizes(context.Context) ([]subscriptions.InboxSize, error) { return nil, nil }

// exported returns the names of the series the server exports, with the
// _bucket, _sum and _count series of histograms.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	m := metrics.New(metrics.Options{})
	m.WatchSessions(sessions{})
	m.WatchStore(counts{})
	// Touch every labelled metric once so that it has a series.
	m.Publisher("ingest", nil)
	m.NotificationsSent([]realtime.Message{{Method: mcpe.MethodEvent}})
	m.HandlerRan(&subscriptions.Invocation{Spec: &mcpe.HandlerSpec{Type: mcpe.HandlerBash}}, subscriptions.Outcome{}, time.Second)
	m.StoreOp("publish", time.Millisecond, errors.New("x"))
	m.Fired(mcpe.ChannelCron, 0, false)
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				names[f.GetName()+suffix] = true
			}
			continue
		}
		names[f.GetName()] = true
	}
	// The store query error counter has a series once a query failed.
	names["mcpe_metrics_store_errors_total"] = true
	return names
}

var metricName = regexp.MustCompile(`\b(mcpe|go|process)_[a-z0-9_]+`)

// checkNames reports the metric names in expr that the server does not
// export.
func checkNames(t *testing.T, where, expr string, names map[string]bool) {
	t.Helper()
	found := metricName.FindAllString(expr, -1)
	if len(found) == 0 {
		t.Errorf("%s: expr %q names no metric", where, expr)
	}
	for _, name := range found {
		if !names[name] {
			t.Errorf("%s: expr names %s, which the server does not export", where, name)
		}
	}
}

func TestAlertRules(t *testing.T) {
	data, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var rs rules
	if err := dec.Decode(&rs); err != nil {
		t.Fatalf("alerts.yml is not a Prometheus rule file: %v", err)
	}
	names := exported(t)
	var alerts []string
	for _, g := range rs.Groups {
		if g.Name == "" {
			t.Error("a group has no name")
		}
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" {
				t.Errorf("rule %+v needs alert and expr", r)
				continue
			}
			alerts = append(alerts, r.Alert)
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
				}
			}
			switch r.Labels["severity"] {
			case "critical", "warning", "info":
			default:
				t.Errorf("%s: severity %q; want critical, warning or info", r.Alert, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: needs a summary and a description", r.Alert)
			}
			if strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")") {
				t.Errorf("%s: unbalanced parentheses in %q", r.Alert, r.Expr)
			}
			checkNames(t, r.Alert, r.Expr, names)
		}
	}
	// The brief of each alert: dropped notifications, handler failures,
	// lagging sessions, ingest refusals, store latency.
	for _, want := range []string{"McpeNotificationsSkipped", "McpeHandlerFailures", "McpeSessionsLagging", "McpeIngestRefusals", "McpeStoreSlow"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("alerts.yml has no %s alert", want)
		}
	}
}

func TestDashboard(t *testing.T) {
	data, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if len(dash.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	names := exported(t)
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			checkNames(t, "panel "+p.Title, tg.Expr, names)
			for _, n := range metricName.FindAllString(tg.Expr, -1) {
				used[strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count")] = true
			}
		}
	}
	// Every family a dashboard reader needs is shown.
	for _, want := range []string{"mcpe_events_total", "mcpe_notifications_sent_total", "mcpe_sessions", "mcpe_subscriptions", "mcpe_digest_fires_total", "mcpe_handler_runs_total", "mcpe_handler_run_duration_seconds", "mcpe_store_operation_duration_seconds", "mcpe_inbox_entries"} {
		if !used[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}
