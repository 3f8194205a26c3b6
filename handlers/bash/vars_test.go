package bash

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{
		"MCPE_EVENT_ID":   "id-1",
		"MCPE_EVENT_TYPE": "a.b",
		"MCPE_EVENT_TAGS": "",
		"MCPE_EVENT_DATA": `{"x":"$MCPE_EVENT_ID $(touch pwned)"}`,
	}
	tests := []struct {
		in, want string
	}{
		{"plain", "plain"},
		{"", ""},
		{"$MCPE_EVENT_ID", "id-1"},
		{"${MCPE_EVENT_ID}", "id-1"},
		{"id=$MCPE_EVENT_ID,type=$MCPE_EVENT_TYPE", "id=id-1,type=a.b"},
		{"${MCPE_EVENT_ID}x", "id-1x"},
		{"$MCPE_EVENT_ID.json", "id-1.json"},
		{"$MCPE_EVENT_ID-$MCPE_EVENT_TYPE", "id-1-a.b"},
		{"[$MCPE_EVENT_TAGS]", "[]"},
		// A longer name is another name, and stays as written.
		{"$MCPE_EVENT_IDx", "$MCPE_EVENT_IDx"},
		// Values are not expanded again.
		{"$MCPE_EVENT_DATA", `{"x":"$MCPE_EVENT_ID $(touch pwned)"}`},
		// Other variables and shell syntax stay as written.
		{"$HOME", "$HOME"},
		{"${HOME}", "${HOME}"},
		{"$MCPE_UNKNOWN", "$MCPE_UNKNOWN"},
		{"$(touch pwned)", "$(touch pwned)"},
		{"`touch pwned`", "`touch pwned`"},
		{"a; rm -rf / && b | c", "a; rm -rf / && b | c"},
		{"$1 $@ $* $# $? $$ $! $-", "$1 $@ $* $# $? $$ $! $-"},
		{"$$MCPE_EVENT_ID", "$id-1"},
		{"$", "$"},
		{"$$", "$$"},
		{"a$", "a$"},
		{"${", "${"},
		{"${}", "${}"},
		{"${MCPE_EVENT_ID", "${MCPE_EVENT_ID"},
		{"${MCPE_EVENT_ID:-x}", "${MCPE_EVENT_ID:-x}"},
		{"${ MCPE_EVENT_ID}", "${ MCPE_EVENT_ID}"},
		{"${1MCPE}", "${1MCPE}"},
		{"$mcpe_event_id", "$mcpe_event_id"},
		{"line1\n$MCPE_EVENT_ID\n", "line1\nid-1\n"},
		{"é$MCPE_EVENT_TYPEé", "éa.bé"},
		{"é${MCPE_EVENT_TYPE}é", "éa.bé"},
	}
	for _, tt := range tests {
		if got := expand(tt.in, vars); got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"$MCPE_EVENT_ID", "${MCPE_EVENT_TYPE}x", "${", "$", "$(x)", "a${MCPE_EVENT_ID"} {
		f.Add(s)
	}
	vars := map[string]string{"MCPE_EVENT_ID": "$MCPE_EVENT_TYPE", "MCPE_EVENT_TYPE": "${MCPE_EVENT_ID}"}
	f.Fuzz(func(t *testing.T, s string) {
		got := expand(s, vars)
		if !strings.Contains(s, "$MCPE_EVENT_") && !strings.Contains(s, "${MCPE_EVENT_") && got != s {
			t.Errorf("expand(%q) = %q; without a placeholder nothing changes", s, got)
		}
		_ = unknownPlaceholder(s)
	})
}

func TestUnknownPlaceholder(t *testing.T) {
	tests := []struct{ in, want string }{
		{"$MCPE_EVENT_ID", ""},
		{"${MCPE_EVENTS}", ""},
		{"$HOME $PATH", ""},
		{"x $MCPE_EVENT_NAME", "MCPE_EVENT_NAME"},
		{"${MCPE_EVENT_ID}${MCPE_DATA}", "MCPE_DATA"},
		{"$MCPE_EVENT_IDx", "MCPE_EVENT_IDx"},
		{"${MCPE_X", ""},
	}
	for _, tt := range tests {
		if got := unknownPlaceholder(tt.in); got != tt.want {
			t.Errorf("unknownPlaceholder(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestVariables(t *testing.T) {
	ev := event(t, map[string]any{"number": 42})
	empty := map[string]string{}
	for _, n := range varNames {
		empty[n] = ""
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range empty {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	spec := bashSpec("x", "")
	tests := []struct {
		name    string
		inv     *subscriptions.Invocation
		want    map[string]string
		wantErr string
	}{
		{
			name: "event",
			inv:  eventInv(spec, ev),
			want: with(
				"MCPE_SUBSCRIPTION_ID", "sub-1",
				"MCPE_DELIVERY", "event",
				"MCPE_EVENT_ID", testEventID,
				"MCPE_EVENT_TYPE", "github.issue.opened",
				"MCPE_EVENT_PRIORITY", "high",
				"MCPE_EVENT_TIMESTAMP", "2025-01-15T10:30:00Z",
				"MCPE_EVENT_TAGS", "frontend,urgent",
				"MCPE_EVENT_DATA", `{"number":42}`,
			),
		},
		{
			name: "event with no data, tags or metadata",
			inv:  eventInv(spec, json.RawMessage(` {"id":"i","type":"t"} `)),
			want: with(
				"MCPE_SUBSCRIPTION_ID", "sub-1",
				"MCPE_DELIVERY", "event",
				"MCPE_EVENT_ID", "i",
				"MCPE_EVENT_TYPE", "t",
				"MCPE_EVENT_DATA", `{}`,
			),
		},
		{
			name: "batch",
			inv:  batchInv(spec, 7, ev, json.RawMessage(`{"id":"2"}`)),
			want: with(
				"MCPE_SUBSCRIPTION_ID", "sub-1",
				"MCPE_DELIVERY", "batch",
				"MCPE_EVENTS", "["+string(ev)+`,{"id":"2"}]`,
				"MCPE_EVENT_COUNT", "2",
				"MCPE_REMAINING", "7",
			),
		},
		{
			name: "empty batch",
			inv:  batchInv(spec, 0),
			want: with(
				"MCPE_SUBSCRIPTION_ID", "sub-1",
				"MCPE_DELIVERY", "batch",
				"MCPE_EVENTS", "[]",
				"MCPE_EVENT_COUNT", "0",
				"MCPE_REMAINING", "0",
			),
		},
		{name: "no event", inv: eventInv(spec, nil), wantErr: "the delivery has no event"},
		{name: "truncated event", inv: eventInv(spec, json.RawMessage(`{"id":"x","type":`)), wantErr: "the event is not valid JSON: "},
		{name: "array event", inv: eventInv(spec, json.RawMessage(`[1]`)), wantErr: "the event is not a JSON object"},
		{name: "null event", inv: eventInv(spec, json.RawMessage(`null`)), wantErr: "the event is not a JSON object"},
		{name: "wrong field type", inv: eventInv(spec, json.RawMessage(`{"metadata":{"tags":"a"}}`)), wantErr: "the event is not valid JSON: "},
		{name: "bad event in batch", inv: batchInv(spec, 0, json.RawMessage(`{`)), wantErr: "the batch holds an event that is not valid JSON"},
		{name: "unknown kind", inv: &subscriptions.Invocation{Kind: "other", Spec: spec}, wantErr: `the delivery is of kind "other"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := variables(tt.inv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("variables() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("variables() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
