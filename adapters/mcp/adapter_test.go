package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

func TestNewValidates(t *testing.T) {
	pub := newRecorder()
	for _, tc := range []struct {
		name string
		opts Options
		want string // in the error; empty for none
	}{
		{name: "ok", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "github", Command: []string{"npx", "-y", "x"}}, {Name: "docs_2-b", URL: "https://example.com/mcp"}}}},
		{name: "no upstreams", opts: Options{Publisher: pub}},
		{name: "no publisher", opts: Options{}, want: "Options.Publisher is required"},
		{name: "empty name", opts: Options{Publisher: pub, Upstreams: []Upstream{{URL: "http://x"}}}, want: "mcp: upstreams[0].name: is empty"},
		{name: "dotted name", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a.b", URL: "http://x"}}}, want: "mcp: upstreams[0].name: \"a.b\" is not a name of letters"},
		{name: "spaced name", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "my server", URL: "http://x"}}}, want: "name: \"my server\""},
		{name: "dash first", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "-x", URL: "http://x"}}}, want: "mcp: upstreams[0].name: \"-x\" is not a name of letters, digits, '_' or '-', not starting with '-'"},
		{name: "long name", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: strings.Repeat("n", 65), URL: "http://x"}}}, want: "65 bytes long"},
		{name: "duplicate", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", URL: "http://x"}, {Name: "a", Command: []string{"x"}}}}, want: "mcp: upstreams[1].name: \"a\" is used twice"},
		{name: "both", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", URL: "http://x", Command: []string{"x"}}}}, want: "not both"},
		{name: "neither", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a"}}}, want: "give command"},
		{name: "empty program", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", Command: []string{""}}}}, want: "mcp: upstreams[0].command: "},
		{name: "ftp url", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", URL: "ftp://x"}}}, want: "mcp: upstreams[0].url: \"ftp://x\""},
		{name: "url without host", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", URL: "http:///mcp"}}}, want: "is not an http or https URL"},
		{name: "env with url", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", URL: "http://x", Env: map[string]string{"A": "b"}}}}, want: "mcp: upstreams[0].env: "},
		{name: "headers with command", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", Command: []string{"x"}, Headers: map[string]string{"A": "b"}}}}, want: "mcp: upstreams[0].headers: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("New succeeded; want an error containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("New: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	a, err := New(Options{Publisher: newRecorder()})
	if err != nil {
		t.Fatal(err)
	}
	o := a.opts
	got := []any{a.backoff.min, a.backoff.max, a.backoff.jitter, a.logLevel, a.maxSubscribed, o.Clock != nil, o.Logger != nil}
	want := []any{time.Second, 5 * time.Minute, 0.2, "info", 100, true, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults mismatch (-want +got):\n%s", diff)
	}
}

func TestLifecycle(t *testing.T) {
	a, err := New(Options{Publisher: newRecorder(), Upstreams: []Upstream{{Name: "x", URL: "http://127.0.0.1:1/mcp"}}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "mcp" {
		t.Errorf("Name() = %q; want \"mcp\"", a.Name())
	}
	if st := state(t, a); st.Name != "x" || st.Status != StatusConnecting {
		t.Errorf("state before Start = %+v; want x connecting", st)
	}
	a.Stop() // before Start
	if err := a.Start(context.Background()); err == nil {
		t.Error("Start after Stop succeeded; want an error")
	}
	a.Stop()

	b, err := New(Options{Publisher: newRecorder()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err == nil {
		t.Error("second Start succeeded; want an error")
	}
	b.Stop()
	b.Stop()
}

func TestCatalog(t *testing.T) {
	a, err := New(Options{Publisher: newRecorder(), Upstreams: []Upstream{{Name: "github", Command: []string{"x"}}, {Name: "docs", URL: "https://x"}}})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, et := range a.Catalog() {
		types = append(types, et.Type)
		if et.Description == "" {
			t.Errorf("%s has no description", et.Type)
		}
		for _, raw := range []json.RawMessage{et.DataSchema, et.Example} {
			if !json.Valid(raw) {
				t.Errorf("%s: invalid JSON %s", et.Type, raw)
			}
		}
		if strings.HasSuffix(et.Type, "<type>") {
			continue
		}
		if err := mcpe.ValidateType(et.Type); err != nil {
			t.Errorf("catalog type: %v", err)
		}
	}
	var want []string
	for _, name := range []string{"github", "docs"} {
		for _, kind := range []string{"connected", "disconnected", "tools.list_changed", "resources.list_changed", "prompts.list_changed", "resources.updated", "log", "<type>"} {
			want = append(want, "mcp."+name+"."+kind)
		}
	}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("catalog types mismatch (-want +got):\n%s", diff)
	}
}

func TestUpstreamEvent(t *testing.T) {
	ts := time.Date(2026, 1, 15, 9, 0, 0, 0, time.UTC)
	manyTags := make([]string, 40)
	for i := range manyTags {
		manyTags[i] = "t" + strings.Repeat("x", i)
	}
	manyJSON, _ := json.Marshal(manyTags)
	longID := strings.Repeat("i", 300)
	longSum := sha256.Sum256([]byte(longID))
	for _, tc := range []struct {
		name    string
		raw     string
		want    mcpe.Event
		wantErr string
	}{
		{
			name: "full",
			raw:  `{"id":"e1","type":"a.b","data":{"x":1},"metadata":{"sourceEventId":"src","timestamp":"2026-01-15T09:00:00Z","priority":"critical","tags":["ci","ci"," "]}}`,
			want: mcpe.Event{Type: "mcp.up.a.b", Data: json.RawMessage(`{"x":1}`), Metadata: mcpe.Metadata{
				SourceEventID: "up:e1", Timestamp: ts, Priority: "critical", Tags: []string{"ci", "upstream:up"}}},
		},
		{
			name: "no id: the upstream's sourceEventId",
			raw:  `{"type":"a","metadata":{"sourceEventId":"src"}}`,
			want: mcpe.Event{Type: "mcp.up.a", Metadata: mcpe.Metadata{SourceEventID: "up:src", Tags: []string{"upstream:up"}}},
		},
		{
			name: "neither id",
			raw:  `{"type":"a","data":{}}`,
			want: mcpe.Event{Type: "mcp.up.a", Data: json.RawMessage(`{}`), Metadata: mcpe.Metadata{Tags: []string{"upstream:up"}}},
		},
		{
			name: "bad priority and timestamp are left to the defaults",
			raw:  `{"id":"e","type":"a","metadata":{"priority":"urgent","timestamp":"yesterday"}}`,
			want: mcpe.Event{Type: "mcp.up.a", Metadata: mcpe.Metadata{SourceEventID: "up:e", Tags: []string{"upstream:up"}}},
		},
		{
			name: "too many tags: the upstream tag stays",
			raw:  `{"id":"e","type":"a","metadata":{"tags":` + string(manyJSON) + `}}`,
			want: mcpe.Event{Type: "mcp.up.a", Metadata: mcpe.Metadata{SourceEventID: "up:e", Tags: append(append([]string(nil), manyTags[:mcpe.MaxTags-1]...), "upstream:up")}},
		},
		{
			name: "long id is hashed",
			raw:  `{"id":"` + longID + `","type":"a"}`,
			want: mcpe.Event{Type: "mcp.up.a", Metadata: mcpe.Metadata{SourceEventID: "up:sha256:" + hex.EncodeToString(longSum[:]), Tags: []string{"upstream:up"}}},
		},
		{
			name: "null data, timestamp out of range",
			raw:  `{"id":"e","type":"a","data":null,"metadata":{"timestamp":"9999-12-31T23:59:59-23:59"}}`,
			want: mcpe.Event{Type: "mcp.up.a", Metadata: mcpe.Metadata{SourceEventID: "up:e", Tags: []string{"upstream:up"}}},
		},
		{
			name: "tags that are only control characters and spaces are dropped",
			raw:  `{"id":"e","type":"a","metadata":{"tags":["\u0001\u00a0","ok"]}}`,
			want: mcpe.Event{Type: "mcp.up.a", Metadata: mcpe.Metadata{SourceEventID: "up:e", Tags: []string{"ok", "upstream:up"}}},
		},
		{name: "data too large", raw: `{"id":"e","type":"a","data":{"x":"` + strings.Repeat("x", MaxEventDataBytes) + `"}}`, wantErr: "at most 1048576"},
		{name: "type too long", raw: `{"id":"e","type":"` + strings.Repeat("x", 250) + `"}`, wantErr: "characters long"},
		{name: "too many segments", raw: `{"id":"e","type":"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o"}`, wantErr: "segments"},
		{name: "bad character", raw: `{"id":"e","type":"a b"}`, wantErr: "contains"},
		{name: "no type", raw: `{"id":"e"}`, wantErr: "no type"},
		{name: "own type", raw: `{"id":"e","type":"resources.updated"}`, wantErr: "emits itself"},
		{name: "array data", raw: `{"id":"e","type":"a","data":[1]}`, wantErr: "not a JSON object"},
		{name: "not an object", raw: `"hello"`, wantErr: "not an MCPE event object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := upstreamEvent("up", json.RawMessage(tc.raw))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("upstreamEvent = %+v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("upstreamEvent: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("event mismatch (-want +got):\n%s", diff)
			}
			if err := subscriptions.NormalizeEvent(&got, ts); err != nil {
				t.Errorf("the event does not validate: %v", err)
			}
		})
	}
}

func TestLogPriority(t *testing.T) {
	for level, want := range map[string]mcpe.Priority{
		"emergency": "critical", "alert": "critical", "critical": "critical",
		"error": "high", "warning": "normal", "notice": "low", "info": "low", "debug": "low", "odd": "low",
	} {
		if got := logPriority(level); got != want {
			t.Errorf("logPriority(%q) = %s; want %s", level, got, want)
		}
	}
}

func TestLogEvent(t *testing.T) {
	long := strings.Repeat("é", MaxLogDataBytes) // twice the limit in bytes
	for _, tc := range []struct {
		name     string
		params   *mcp.LoggingMessageParams
		want     map[string]any
		priority mcpe.Priority
		wantErr  string
	}{
		{
			name:     "object data",
			params:   &mcp.LoggingMessageParams{Level: "critical", Logger: "db", Data: map[string]any{"msg": "down"}},
			want:     map[string]any{"server": "up", "level": "critical", "logger": "db", "data": map[string]any{"msg": "down"}},
			priority: mcpe.PriorityCritical,
		},
		{
			name:     "no data",
			params:   &mcp.LoggingMessageParams{Level: "info"},
			want:     map[string]any{"server": "up", "level": "info", "data": nil},
			priority: mcpe.PriorityLow,
		},
		{
			name:     "long data is cut",
			params:   &mcp.LoggingMessageParams{Level: "warning", Data: long},
			want:     map[string]any{"server": "up", "level": "warning", "data": adapters.Clip(`"`+long+`"`, MaxLogDataBytes), "truncated": true},
			priority: mcpe.PriorityNormal,
		},
		{name: "unknown level", params: &mcp.LoggingMessageParams{Level: "loud", Data: "x"}, wantErr: `"loud" is not an MCP logging level`},
		{name: "no params", wantErr: "no params"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := logEvent("up", tc.params, t0)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("logEvent = %v; want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, decode(t, ev)); diff != "" {
				t.Errorf("data mismatch (-want +got):\n%s", diff)
			}
			if ev.Type != "mcp.up.log" || ev.Metadata.Priority != tc.priority || !ev.Metadata.Timestamp.Equal(t0) {
				t.Errorf("event %s, priority %s, timestamp %v; want mcp.up.log, %s, %v", ev.Type, ev.Metadata.Priority, ev.Metadata.Timestamp, tc.priority, t0)
			}
			if len(ev.Data) > MaxLogDataBytes+1024 {
				t.Errorf("data is %d bytes", len(ev.Data))
			}
		})
	}
}

func TestResourceEvent(t *testing.T) {
	ev, err := resourceEvent("up", &mcp.ResourceUpdatedNotificationParams{URI: "file:///a"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"server": "up", "uri": "file:///a"}, decode(t, ev)); diff != "" || ev.Type != "mcp.up.resources.updated" {
		t.Errorf("%s data mismatch (-want +got):\n%s", ev.Type, diff)
	}
	for _, p := range []*mcp.ResourceUpdatedNotificationParams{nil, {}, {URI: strings.Repeat("u", MaxURIBytes+1)}} {
		if _, err := resourceEvent("up", p, t0); err == nil {
			t.Errorf("resourceEvent(%+v) succeeded; want an error", p)
		}
	}
}

func TestNotificationEvents(t *testing.T) {
	for _, tc := range []struct {
		name, method, params string
		types                []string
		errs                 []string
	}{
		{name: "event", method: "events/event", params: `{"subscriptionId":"s","event":{"id":"1","type":"a.b"}}`, types: []string{"mcp.up.a.b"}},
		{name: "event missing", method: "events/event", params: `{"subscriptionId":"s"}`, errs: []string{"have no event"}},
		{name: "event null", method: "events/event", params: `{"event":null}`, errs: []string{"have no event"}},
		{name: "params not an object", method: "events/event", params: `[1]`, errs: []string{"not an object with an event"}},
		{
			name: "batch", method: "events/batch", params: `{"events":[{"type":"a"},{"type":"log"},7,{"type":"b"}]}`,
			types: []string{"mcp.up.a", "mcp.up.b"},
			errs:  []string{"events[1]: the event's type \"log\" is one the adapter emits itself", "events[2]: the event is not an MCPE event object"},
		},
		{name: "batch not an array", method: "events/batch", params: `{"events":{}}`, errs: []string{"not an object with an events array"}},
		{name: "expiry is not an event", method: "events/subscription_expired", params: `{"subscriptionId":"s"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events, errs := notificationEvents("up", tc.method, json.RawMessage(tc.params))
			var types, msgs []string
			for _, ev := range events {
				types = append(types, ev.Type)
			}
			for _, err := range errs {
				msgs = append(msgs, err.Error())
			}
			if diff := cmp.Diff(tc.types, types); diff != "" {
				t.Errorf("types mismatch (-want +got):\n%s", diff)
			}
			if len(msgs) != len(tc.errs) {
				t.Fatalf("errors %q; want %d containing %q", msgs, len(tc.errs), tc.errs)
			}
			for i, want := range tc.errs {
				if !strings.Contains(msgs[i], want) {
					t.Errorf("error %d = %q; want it to contain %q", i, msgs[i], want)
				}
			}
		})
	}
}

// Every type of every upstream passes the catalog contract: its example
// is accepted by its schema.
func TestCatalogContract(t *testing.T) {
	a, err := New(Options{Publisher: newRecorder(), Upstreams: []Upstream{{Name: "github", Command: []string{"x"}}, {Name: "docs", URL: "https://x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := adaptertest.CheckCatalog(a.Catalog()); err != nil {
		t.Error(err)
	}
}
