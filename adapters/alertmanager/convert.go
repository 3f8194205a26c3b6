package alertmanager

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// The two alert statuses, which end the event types.
const (
	statusFiring   = "firing"
	statusResolved = "resolved"
)

// leadingLabels come first among the tags (and survive the label limit),
// in this order; the other labels follow by name.
var leadingLabels = []string{"alertname", "severity", "instance", "job", "namespace", "service"}

// Data is the data of an alert.<alertname>.<status> event.
type Data struct {
	// Alertname is the alertname label, as it is (the type carries it made
	// into a segment).
	Alertname string `json:"alertname"`
	// Status is "firing" or "resolved".
	Status string `json:"status"`
	// Labels are the alert's labels.
	Labels map[string]string `json:"labels"`
	// Annotations are the alert's annotations, such as summary,
	// description and runbook_url.
	Annotations map[string]string `json:"annotations"`
	// StartsAt is when the alert started firing (RFC 3339, UTC).
	StartsAt string `json:"startsAt,omitempty"`
	// EndsAt is when a resolved alert ended; left out while it fires.
	EndsAt string `json:"endsAt,omitempty"`
	// GeneratorURL links to what raised the alert, such as a Prometheus
	// graph.
	GeneratorURL string `json:"generatorURL,omitempty"`
	// Fingerprint identifies the alert by its labels.
	Fingerprint string `json:"fingerprint"`
	// Receiver is the Alertmanager receiver that sent the notification.
	Receiver string `json:"receiver,omitempty"`
	// ExternalURL links back to the Alertmanager.
	ExternalURL string `json:"externalURL,omitempty"`
	// GroupKey identifies the alert group of the notification.
	GroupKey string `json:"groupKey,omitempty"`
	// TruncatedAlerts counts the alerts of the group Alertmanager left out
	// of the notification (its max_alerts).
	TruncatedAlerts uint64 `json:"truncatedAlerts,omitempty"`
	// Truncated is true when labels or annotations were cut to the
	// adapter's limits.
	Truncated bool `json:"truncated,omitempty"`
}

// converted is one alert of a notification: its event, or why it has none.
type converted struct {
	index     int
	alertname string
	event     mcpe.Event
	err       error
}

// convert turns the alerts of n into events, in order.
func (a *Adapter) convert(n *notification) []converted {
	now := a.shared.Clock.Now()
	out := make([]converted, len(n.alerts))
	for i, raw := range n.alerts {
		in, err := decodeAlert(raw)
		// A bad alert may still name itself, which helps find it.
		out[i] = converted{index: i, alertname: adapters.Clip(in.Labels["alertname"], MaxLabelValueBytes), err: err}
		if err == nil {
			out[i].event, out[i].err = a.event(n, in, now)
		}
	}
	return out
}

// event turns one alert into an event; the error, relative to the alert,
// says why it cannot be one.
func (a *Adapter) event(n *notification, in alertIn, now time.Time) (mcpe.Event, error) {
	status := strings.ToLower(strings.TrimSpace(in.Status))
	switch status {
	case statusFiring, statusResolved:
	case "":
		return mcpe.Event{}, fmt.Errorf(`status is missing; an alert's status is %q or %q`, statusFiring, statusResolved)
	default:
		return mcpe.Event{}, fmt.Errorf(`status %q is not an alert status; Alertmanager sends %q or %q`, adapters.Clip(in.Status, 64), statusFiring, statusResolved)
	}
	startsAt, err := parseTime("startsAt", in.StartsAt)
	if err != nil {
		return mcpe.Event{}, err
	}
	endsAt, err := parseTime("endsAt", in.EndsAt)
	if err != nil {
		return mcpe.Event{}, err
	}

	fingerprint := strings.TrimSpace(in.Fingerprint)
	if fingerprint == "" {
		fingerprint = Fingerprint(in.Labels)
	}
	idPart := fingerprint
	if len(idPart) > maxFingerprintBytes {
		sum := sha256.Sum256([]byte(idPart))
		idPart = "sha256-" + hex.EncodeToString(sum[:])
	}

	labels, labelsCut := bound(in.Labels, MaxLabels, MaxLabelValueBytes)
	annotations, annotationsCut := bound(in.Annotations, MaxAnnotations, MaxAnnotationValueBytes)
	data := Data{
		Alertname:       labels["alertname"],
		Status:          status,
		Labels:          labels,
		Annotations:     annotations,
		StartsAt:        formatTime(startsAt),
		EndsAt:          formatTime(endsAt),
		GeneratorURL:    adapters.Clip(in.GeneratorURL, MaxURLBytes),
		Fingerprint:     adapters.Clip(fingerprint, maxFingerprintBytes),
		Receiver:        n.receiver,
		ExternalURL:     n.externalURL,
		GroupKey:        n.groupKey,
		TruncatedAlerts: n.truncatedAlerts,
		Truncated:       labelsCut || annotationsCut,
	}
	raw, err := adapters.EncodeJSON(data)
	if err != nil {
		return mcpe.Event{}, fmt.Errorf("could not be encoded: %v", err)
	}

	ts := startsAt
	if status == statusResolved {
		ts = endsAt
	}
	if ts.IsZero() {
		ts = now
	}
	tags := make([]string, 0, len(labels))
	for _, name := range labelOrder(labels) {
		tags = append(tags, name+":"+labels[name])
	}
	return mcpe.Event{
		Type: "alert." + adapters.Segment(in.Labels["alertname"]) + "." + status,
		Data: raw,
		Metadata: mcpe.Metadata{
			SourceEventID: idPart + ":" + status + ":" + startsAt.UTC().Format(time.RFC3339Nano),
			Timestamp:     ts.UTC(),
			Priority:      a.priority(in.Labels["severity"]),
			Tags:          adapters.Tags(tags...),
		},
	}, nil
}

// parseTime reads an RFC 3339 time; empty and Alertmanager's
// "0001-01-01T00:00:00Z" are the zero time.
func parseTime(field, s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf(`%s %q is not an RFC 3339 time such as "2025-01-15T10:30:00Z"`, field, adapters.Clip(s, 64))
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return time.Time{}, fmt.Errorf("%s %q is in the year %d in UTC; give a time between the years 0001 and 9999", field, s, y)
	}
	return t, nil
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Fingerprint returns Alertmanager's fingerprint of an alert with labels:
// FNV-1a 64 of the label names and values sorted by name, each followed by
// the byte 0xff, in 16 hex digits (prometheus/common's
// model.LabelSet.Fingerprint). The adapter uses it for alerts that come
// without one.
func Fingerprint(labels map[string]string) string {
	h := fnv.New64a()
	sep := []byte{0xff}
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		h.Write([]byte(name))
		h.Write(sep)
		h.Write([]byte(labels[name]))
		h.Write(sep)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// labelOrder returns the names of m, leadingLabels first.
func labelOrder(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for _, name := range leadingLabels {
		if _, ok := m[name]; ok {
			names = append(names, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(leadingLabels, name) {
			names = append(names, name)
		}
	}
	return names
}

// bound returns at most max entries of m (leadingLabels first, then by
// name) with names cut to MaxNameBytes and values to maxValue, and whether
// anything was cut or left out. The result is never nil.
func bound(m map[string]string, max, maxValue int) (map[string]string, bool) {
	out := make(map[string]string, min(len(m), max))
	cut := false
	for _, name := range labelOrder(m) {
		if len(out) == max {
			return out, true
		}
		short := adapters.Clip(name, MaxNameBytes)
		if _, dup := out[short]; dup {
			cut = true
			continue
		}
		value := adapters.Clip(m[name], maxValue)
		cut = cut || short != name || value != m[name]
		out[short] = value
	}
	return out, cut
}
