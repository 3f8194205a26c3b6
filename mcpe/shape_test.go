package mcpe

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestShape(t *testing.T) {
	event := `{"id":"e1","type":"github.issues.opened","data":{"action":"opened","issue":{"title":"Login <fails>","html_url":"https://x/1","body":"long","milestone":null,"user":{"login":"o"}},"empty":{},"gone":null},"metadata":{"timestamp":"2025-06-02T09:12:44Z","priority":"high"}}`
	meta := `"metadata":{"timestamp":"2025-06-02T09:12:44Z","priority":"high"},"shaped":true}`
	for _, tc := range []struct {
		name string
		d    Delivery
		want string
	}{
		{"whole", Delivery{}, event},
		{"fits", Delivery{MaxEventBytes: 4096}, event},
		{"fields, nested as they were", Delivery{Fields: []string{"issue.title", "issue.html_url", "issue.user.login"}},
			`{"id":"e1","type":"github.issues.opened","data":{"issue":{"html_url":"https://x/1","title":"Login <fails>","user":{"login":"o"}}},` + meta},
		{"a whole object, nulls and empty objects left out", Delivery{Fields: []string{"issue", "empty", "gone"}},
			`{"id":"e1","type":"github.issues.opened","data":{"issue":{"body":"long","html_url":"https://x/1","title":"Login <fails>","user":{"login":"o"}}},` + meta},
		{"missing and non-object paths", Delivery{Fields: []string{"nope", "action.x", "issue.title.x", "issue.nope.deeper"}},
			`{"id":"e1","type":"github.issues.opened","data":{},` + meta},
	} {
		if got := string(tc.d.Shape(json.RawMessage(event))); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestShapeMaxEventBytes(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6000 bytes
	items := make([]int, 500)
	data, _ := json.Marshal(map[string]any{"log": long, "items": items, "short": "kept", "nested": map[string]any{"more": long}})
	event := `{"id":"e1","type":"deploy.done","data":` + string(data) + `,"metadata":{"priority":"normal"}}`
	for _, max := range []int{MinEventBytes, 1000, 4096, 9000} {
		got := Delivery{MaxEventBytes: max}.Shape(json.RawMessage(event))
		if len(got) > max {
			t.Errorf("maxEventBytes %d: got %d bytes: %s", max, len(got), got)
		}
		var ev struct {
			Data struct {
				Log, Short string
				Items      []any
			}
			Shaped bool
		}
		if err := json.Unmarshal(got, &ev); err != nil {
			t.Fatalf("maxEventBytes %d: not JSON: %v\n%s", max, err, got)
		}
		if !ev.Shaped || ev.Data.Short != "kept" || !strings.HasPrefix(ev.Data.Log, "é") ||
			!strings.Contains(ev.Data.Log, "…[truncated ") || !strings.HasSuffix(ev.Data.Log, " bytes]") {
			t.Errorf("maxEventBytes %d: log %.40q…, short %q, shaped %v", max, ev.Data.Log, ev.Data.Short, ev.Shaped)
		}
		if last := ev.Data.Items[len(ev.Data.Items)-1]; !strings.HasPrefix(last.(string), "[truncated ") {
			t.Errorf("maxEventBytes %d: the items end with %v, want a note of how many were cut", max, last)
		}
	}
	// Metadata alone over the cap: cut as far as it goes, still JSON.
	big := `{"id":"e1","type":"a","data":{"s":"` + long + `"},"metadata":{"tags":["` + strings.Repeat("t", 2000) + `"]}}`
	if got := (Delivery{MaxEventBytes: MinEventBytes}).Shape(json.RawMessage(big)); !json.Valid(got) || len(got) > 2200 {
		t.Errorf("over the cap by its metadata: %d bytes, valid %v", len(got), json.Valid(got))
	}
}

func TestShapeAllKeepsNoneAsNone(t *testing.T) {
	d := Delivery{Fields: []string{"a"}}
	if got := d.ShapeAll(nil); got != nil {
		t.Errorf("ShapeAll(nil) = %#v, want nil (an event item has no events)", got)
	}
	if got := d.ShapeAll([]json.RawMessage{}); got == nil || len(got) != 0 {
		t.Errorf("ShapeAll([]) = %#v, want [] (a digest of nothing)", got)
	}
}

func TestShapeValidate(t *testing.T) {
	realtime := []Channel{ChannelRealtime}
	for _, tc := range []struct {
		d    Delivery
		want string
	}{
		{Delivery{Fields: make([]string, MaxFields+1)}, "delivery.fields: has 33 paths; at most 32 are accepted"},
		{Delivery{Fields: []string{"issue..title"}}, `delivery.fields[0]: "issue..title" is not a path into data; give dot-separated keys`},
		{Delivery{Fields: []string{"a", strings.Repeat("x", MaxFieldLength+1)}}, "delivery.fields[1]"},
		{Delivery{MaxEventBytes: 100}, "delivery.maxEventBytes: is 100; give a number of bytes from 512 to 1048576"},
		{Delivery{MaxEventBytes: -1}, "delivery.maxEventBytes: is -1"},
		{Delivery{Fields: []string{"issue.title"}, MaxEventBytes: 700}, ""},
	} {
		tc.d.Channels = realtime
		err := tc.d.Validate(realtime)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: got %v, want %q", tc.d, err, tc.want)
		}
	}
	for label, ok := range map[string]bool{"": true, "merged PRs in acme/api": true, strings.Repeat("é", MaxLabelLength): true,
		strings.Repeat("x", MaxLabelLength+1): false, "two\nlines": false} {
		if err := ValidateLabel(label); (err == nil) != ok {
			t.Errorf("label %.20q: got %v", label, err)
		}
	}
}

func FuzzShape(f *testing.F) {
	f.Add(`{"id":"e","type":"a","data":{"a":{"b":"`+strings.Repeat("x", 900)+`"},"c":[1,2,3]},"metadata":{}}`, "a.b", 512)
	f.Add(`{"data":null}`, "a", 600)
	f.Fuzz(func(t *testing.T, event, field string, max int) {
		if !json.Valid([]byte(event)) {
			return
		}
		d := Delivery{Channels: []Channel{ChannelRealtime}, Fields: []string{field}, MaxEventBytes: max}
		if d.Validate(d.Channels) != nil {
			d.Fields = nil
		}
		if got := d.Shape(json.RawMessage(event)); !json.Valid(got) {
			t.Fatalf("not JSON: %s", got)
		}
	})
}
