package alertmanager

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

func TestCatalog(t *testing.T) {
	a, _ := newTestAdapter(t, nil)
	cat := a.Catalog()
	var types []string
	for _, et := range cat {
		types = append(types, et.Type)
	}
	if diff := cmp.Diff([]string{"alert.<alertname>.firing", "alert.<alertname>.resolved"}, types); diff != "" {
		t.Fatalf("types mismatch (-want +got):\n%s", diff)
	}
	for _, et := range cat {
		t.Run(et.Type, func(t *testing.T) {
			// The pattern with a real alertname is a valid type.
			if err := mcpe.ValidateType(strings.Replace(et.Type, "<alertname>", "HighCPUUsage", 1)); err != nil {
				t.Error(err)
			}
			if et.Description == "" || et.Priority == "" || et.Tags == "" {
				t.Errorf("description, priority or tags missing: %+v", et)
			}
			var schema struct {
				Type       string                     `json:"type"`
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			}
			if err := json.Unmarshal(et.DataSchema, &schema); err != nil || schema.Type != "object" {
				t.Fatalf("data schema %s: %v", et.DataSchema, err)
			}
			var example map[string]any
			if err := json.Unmarshal(et.Example, &example); err != nil {
				t.Fatalf("example %s: %v", et.Example, err)
			}
			for _, k := range schema.Required {
				if _, ok := example[k]; !ok {
					t.Errorf("example lacks required %q", k)
				}
			}
			for k := range example {
				if _, ok := schema.Properties[k]; !ok {
					t.Errorf("example has %q, which the schema does not describe", k)
				}
			}
			status := et.Type[strings.LastIndex(et.Type, ".")+1:]
			if example["status"] != status {
				t.Errorf("example status = %v, want %s", example["status"], status)
			}
		})
	}
	// Every field of Data is in the schema.
	var all map[string]any
	full, _ := json.Marshal(Data{StartsAt: "x", EndsAt: "x", GeneratorURL: "x", Receiver: "x", ExternalURL: "x", GroupKey: "x", TruncatedAlerts: 1, Truncated: true})
	json.Unmarshal(full, &all)
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	json.Unmarshal(cat[0].DataSchema, &schema)
	for k := range all {
		if _, ok := schema.Properties[k]; !ok {
			t.Errorf("Data field %q is not in the schema", k)
		}
	}
	// Callers get a copy.
	cat[0].Type = "changed"
	if a.Catalog()[0].Type == "changed" {
		t.Error("Catalog returns the adapter's own slice")
	}
}

func TestCatalogPriorityFollowsOptions(t *testing.T) {
	a, _ := newTestAdapter(t, func(o *Options) {
		o.SeverityPriorities = map[string]mcpe.Priority{"P1": mcpe.PriorityCritical}
	})
	got := a.Catalog()[0].Priority
	if !strings.Contains(got, "p1 -> critical") || strings.Contains(got, "warning") {
		t.Errorf("priority = %q; want the configured rule only", got)
	}
	if !slices.ContainsFunc(a.Catalog(), func(et mcpe.EventType) bool { return strings.Contains(et.Description, "HighCPU_Usage") }) {
		t.Error("no description shows how an alertname becomes a segment")
	}
}

// The catalog passes the check every source's catalog passes: valid types,
// one-line descriptions, and examples that their JSON Schema accepts, with
// the default rules and with configured ones.
func TestCatalogContract(t *testing.T) {
	for _, severities := range []map[string]mcpe.Priority{nil, {"P1": mcpe.PriorityCritical}, {}} {
		a, _ := newTestAdapter(t, func(o *Options) { o.SeverityPriorities = severities })
		if err := adaptertest.CheckCatalog(a.Catalog()); err != nil {
			t.Errorf("severities %v: %v", severities, err)
		}
	}
}
