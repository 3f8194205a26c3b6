package alertmanager

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// dataSchema is the JSON Schema of Data.
const dataSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["alertname", "status", "labels", "annotations", "fingerprint"],
  "properties": {
    "alertname": {"type": "string", "description": "The alertname label as it is; the event type carries it made into a segment."},
    "status": {"enum": ["firing", "resolved"]},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}, "description": "The alert's labels, such as severity, instance, job and namespace."},
    "annotations": {"type": "object", "additionalProperties": {"type": "string"}, "description": "The alert's annotations, such as summary, description and runbook_url."},
    "startsAt": {"type": "string", "format": "date-time", "description": "When the alert started firing (UTC)."},
    "endsAt": {"type": "string", "format": "date-time", "description": "When a resolved alert ended (UTC); absent while it fires."},
    "generatorURL": {"type": "string", "description": "Link to what raised the alert, such as a Prometheus graph."},
    "fingerprint": {"type": "string", "description": "Identifies the alert by its labels."},
    "receiver": {"type": "string", "description": "The Alertmanager receiver that sent it."},
    "externalURL": {"type": "string", "description": "Link back to the Alertmanager."},
    "groupKey": {"type": "string", "description": "Identifies the alert group of the notification."},
    "truncatedAlerts": {"type": "integer", "minimum": 1, "description": "How many alerts of the group Alertmanager left out of the notification (max_alerts)."},
    "truncated": {"const": true, "description": "Present when labels or annotations were cut to the adapter's limits."}
  }
}`

// exampleAlert is the alert the catalog's examples are made from.
var exampleAlert = alertIn{
	Labels: map[string]string{
		"alertname": "HighCPUUsage",
		"severity":  "warning",
		"instance":  "web-1:9100",
		"job":       "node",
	},
	Annotations: map[string]string{
		"summary":     "CPU usage on web-1:9100 is above 90%",
		"description": "CPU usage has been above 90% for 10 minutes.",
		"runbook_url": "https://runbooks.example.com/HighCPUUsage",
	},
	StartsAt:     "2025-01-15T10:30:00Z",
	GeneratorURL: "http://prometheus.example.com:9090/graph?g0.expr=cpu_usage+%3E+0.9&g0.tab=1",
}

// buildCatalog returns the adapter's event types, with examples made by
// the adapter itself from exampleAlert.
func (a *Adapter) buildCatalog() []mcpe.EventType {
	n := &notification{
		receiver:    "mcpe",
		externalURL: "http://alertmanager.example.com:9093",
		groupKey:    `{}:{alertname="HighCPUUsage"}`,
	}
	firing, resolved := exampleAlert, exampleAlert
	firing.Status = statusFiring
	resolved.Status = statusResolved
	resolved.EndsAt = "2025-01-15T10:45:00Z"
	tags := "every label as \"name:value\" (alertname, severity, instance, job, namespace and service first, then by name), at most " +
		fmt.Sprint(mcpe.MaxTags)
	priority := a.priorityText()
	return []mcpe.EventType{
		{
			Type: "alert.<alertname>.firing",
			Description: "A Prometheus Alertmanager alert fires; <alertname> is its alertname label made into a type segment " +
				"(\"HighCPU Usage\" becomes \"HighCPU_Usage\"). A repeat of the same alert state is delivered once.",
			DataSchema: json.RawMessage(dataSchema),
			Example:    a.example(n, firing),
			Priority:   priority,
			Tags:       tags,
		},
		{
			Type:        "alert.<alertname>.resolved",
			Description: "A Prometheus Alertmanager alert resolved; <alertname> as for alert.<alertname>.firing.",
			DataSchema:  json.RawMessage(dataSchema),
			Example:     a.example(n, resolved),
			Priority:    priority,
			Tags:        tags,
		},
	}
}

func (a *Adapter) example(n *notification, in alertIn) json.RawMessage {
	ev, err := a.event(n, in, time.Time{})
	if err != nil {
		panic("alertmanager: the catalog example is not a valid alert: " + err.Error())
	}
	return ev.Data
}

// priorityText says how the severity label sets the priority.
func (a *Adapter) priorityText() string {
	var rules []string
	for _, sev := range slices.Sorted(maps.Keys(a.severities)) {
		rules = append(rules, fmt.Sprintf("%s -> %s", sev, a.severities[sev]))
	}
	if len(rules) == 0 {
		return "normal"
	}
	return "from the severity label, ignoring case: " + strings.Join(rules, ", ") + "; any other severity, or none, -> normal"
}

// Catalog lists the event types the adapter emits: alert.<alertname>.firing
// and alert.<alertname>.resolved.
func (a *Adapter) Catalog() []mcpe.EventType { return slices.Clone(a.catalog) }
