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
		{name: "empty name", opts: Options{Publisher: pub, Upstreams: []Upstream{{URL: "http://x"}}}, want: "Options.Upstreams[0].Name \"\": is empty"},
		{name: "dotted name", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a.b", URL: "http://x"}}}, want: "Options.Upstreams[0].Name \"a.b\": give a name of letters"},
		{name: "spaced name", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "my server", URL: "http://x"}}}, want: "Name \"my server\""},
		{name: "long name", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: strings.Repeat("n", 65), URL: "http://x"}}}, want: "65 bytes long"},
		{name: "duplicate", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", URL: "http://x"}, {Name: "a", Command: []string{"x"}}}}, want: "Options.Upstreams[1].Name \"a\" is used twice"},
		{name: "both", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", URL: "http://x", Command: []string{"x"}}}}, want: "not both"},
		{name: "neither", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a"}}}, want: "give Command"},
		{name: "empty program", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", Command: []string{""}}}}, want: "Options.Upstreams[0].Command"},
		{name: "ftp url", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", URL: "ftp://x"}}}, want: "Options.Upstreams[0].URL \"ftp://x\""},
		{name: "url without host", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", URL: "http:///mcp"}}}, want: "give an http or https URL"},
		{name: "env with url", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", URL: "http://x", Env: map[string]string{"A": "b"}}}}, want: "Options.Upstreams[0].Env"},
		{name: "headers with command", opts: Options{Publisher: pub, Upstreams: []Upstream{{Name: "a", Command: []string{"x"}, Headers: map[string]string{"A": "b"}}}}, want: "Options.Upstreams[0].Headers"},
		{name: "backoff order", opts: Options{Publisher: pub, MinBackoff: time.Minute, MaxBackoff: time.Second}, want: "Options.MaxBackoff"},
		{name: "negative backoff", opts: Options{Publisher: pub, MinBackoff: -time.Second}, want: "must not be negative"},
		{name: "jitter", opts: Options{Publisher: pub, Jitter: 1.5}, want: "Options.Jitter"},
		{name: "log level", opts: Options{Publisher: pub, LogLevel: "verbose"}, want: "Options.LogLevel \"verbose\""},
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
	got := []any{o.MinBackoff, o.MaxBackoff, o.Jitter, o.LogLevel, o.MaxSubscribedResources, o.Clock != nil, o.Logger != nil}
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
		if err := subscriptions.ValidateType(et.Type); err != nil {
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
		want    subscriptions.Event
		wantErr string
	}{
		{
			name: "full",
			raw:  `{"id":"e1","type":"a.b","data":{"x":1},"metadata":{"sourceEventId":"src","timestamp":"2026-01-15T09:00:00Z","priority":"critical","tags":["ci","ci"," "]}}`,
			want: subscriptions.Event{Type: "mcp.up.a.b", Data: json.RawMessage(`{"x":1}`), Metadata: subscriptions.Metadata{
				SourceEventID: "up:e1", Timestamp: ts, Priority: "critical", Tags: []string{"ci", "upstream:up"}}},
		},
		{
			name: "no id: the upstream's sourceEventId",
			raw:  `{"type":"a","metadata":{"sourceEventId":"src"}}`,
			want: subscriptions.Event{Type: "mcp.up.a", Metadata: subscriptions.Metadata{SourceEventID: "up:src", Tags: []string{"upstream:up"}}},
		},
		{
			name: "neither id",
			raw:  `{"type":"a","data":{}}`,
			want: subscriptions.Event{Type: "mcp.up.a", Data: json.RawMessage(`{}`), Metadata: subscriptions.Metadata{Tags: []string{"upstream:up"}}},
		},
		{
			name: "bad priority and timestamp are left to the defaults",
			raw:  `{"id":"e","type":"a","metadata":{"priority":"urgent","timestamp":"yesterday"}}`,
			want: subscriptions.Event{Type: "mcp.up.a", Metadata: subscriptions.Metadata{SourceEventID: "up:e", Tags: []string{"upstream:up"}}},
		},
		{
			name: "too many tags: the upstream tag stays",
			raw:  `{"id":"e","type":"a","metadata":{"tags":` + string(manyJSON) + `}}`,
			want: subscriptions.Event{Type: "mcp.up.a", Metadata: subscriptions.Metadata{SourceEventID: "up:e", Tags: append(append([]string(nil), manyTags[:subscriptions.MaxTags-1]...), "upstream:up")}},
		},
		{
			name: "long id is hashed",
			raw:  `{"id":"` + longID + `","type":"a"}`,
			want: subscriptions.Event{Type: "mcp.up.a", Metadata: subscriptions.Metadata{SourceEventID: "up:sha256:" + hex.EncodeToString(longSum[:]), Tags: []string{"upstream:up"}}},
		},
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
			if err := got.Normalize(ts); err != nil {
				t.Errorf("the event does not validate: %v", err)
			}
		})
	}
}

func TestLogPriority(t *testing.T) {
	for level, want := range map[string]subscriptions.Priority{
		"emergency": "critical", "alert": "critical", "critical": "critical",
		"error": "high", "warning": "normal", "notice": "low", "info": "low", "debug": "low", "odd": "low",
	} {
		if got := logPriority(level); got != want {
			t.Errorf("logPriority(%q) = %s; want %s", level, got, want)
		}
	}
}
