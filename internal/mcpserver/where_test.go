package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

const (
	prClosed    = "github.pull_request.closed"
	mergedInAPI = `data.pull_request.merged == true && data.repository.full_name == "acme/api"`
)

func pr(repo string, merged bool) string {
	return `{"pull_request": {"merged": ` + map[bool]string{true: "true", false: "false"}[merged] + `}, "repository": {"full_name": "` + repo + `"}}`
}

// TestWhereOverTools checks filter.where through events_subscribe and
// events_update: refused with its position, routed, and changed.
func TestWhereOverTools(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect("alice", nil)
	text := c.CallError(t, "events_subscribe", map[string]any{"filter": map[string]any{"eventTypes": []string{prClosed}, "where": "data.pull_request.merged =="}})
	if !strings.Contains(text, "filter.where: line 1, column 28: Syntax error") {
		t.Errorf("broken condition: %q; want its position", text)
	}
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{prClosed}, "where": mergedInAPI}})
	e.publish(prClosed, pr("acme/api", false), mcpe.Metadata{})
	e.publish(prClosed, `{}`, mcpe.Metadata{})
	want := e.publish(prClosed, pr("acme/api", true), mcpe.Metadata{})
	if _, ev := c.NextEvent(t); ev.ID != want {
		t.Fatalf("got %s %s; want only the merged pull request", ev.ID, ev.Data)
	}
	var got subscriptions.Subscription
	c.MustCall(t, "events_update", map[string]any{"subscriptionId": sub.ID,
		"filter": map[string]any{"eventTypes": []string{prClosed}, "where": `data.pull_request.merged == false`}}, &got)
	if got.Filter.Where != `data.pull_request.merged == false` {
		t.Errorf("updated filter = %+v", got.Filter)
	}
	e.publish(prClosed, pr("acme/api", true), mcpe.Metadata{})
	want = e.publish(prClosed, pr("acme/api", false), mcpe.Metadata{})
	if _, ev := c.NextEvent(t); ev.ID != want {
		t.Fatalf("got %s %s after the update; want only the unmerged pull request", ev.ID, ev.Data)
	}
}

// TestWhereInDigest checks that a digest collects only the events its
// condition holds for.
func TestWhereInDigest(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect("alice", nil)
	c.Subscribe(t, map[string]any{
		"filter":   map[string]any{"eventTypes": []string{prClosed}, "where": mergedInAPI},
		"delivery": map[string]any{"channels": []string{"cron"}, "cronSchedule": map[string]any{"expression": "0 10 * * *", "timezone": "UTC"}},
	})
	e.publish(prClosed, pr("acme/web", true), mcpe.Metadata{})
	want := e.publish(prClosed, pr("acme/api", true), mcpe.Metadata{})
	e.publish(prClosed, pr("acme/api", false), mcpe.Metadata{})
	e.clock.AdvanceTo(start.Add(2 * time.Hour))
	n := c.Next(t)
	var params struct {
		Events []mcpe.Event `json:"events"`
	}
	if err := json.Unmarshal(n.Params, &params); err != nil || n.Method != mcpe.MethodBatch {
		t.Fatalf("got %s %s, %v; want events/batch", n.Method, n.Params, err)
	}
	var got []string
	for _, ev := range params.Events {
		got = append(got, ev.ID)
	}
	if diff := cmp.Diff([]string{want}, got); diff != "" {
		t.Errorf("digest events mismatch (-want +got):\n%s", diff)
	}
}

// TestWhereInSEPFilter checks filter.where in the arguments of SEP-3415's
// mcpe.filter.
func TestWhereInSEPFilter(t *testing.T) {
	e := newEnv(t, envOptions{})
	w := sepSession(t, e, "alice")
	args := `"name":"mcpe.filter","arguments":{"eventTypes":["github.*"],"where":` + mustJSON(t, mergedInAPI) + `}`
	cursor := pollResult(t, w, `{`+args+`}`)["cursor"].(string)
	e.publish(prClosed, pr("acme/api", false), mcpe.Metadata{})
	want := e.publish(prClosed, pr("acme/api", true), mcpe.Metadata{})
	if diff := cmp.Diff([]string{want}, eventIDs(pollResult(t, w, `{`+args+`,"cursor":"`+cursor+`"}`))); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	w.send(t, `{"jsonrpc":"2.0","id":2,"method":"events/poll","params":{"name":"mcpe.filter","arguments":{"eventTypes":["github.*"],"where":"data.x +"}}}`)
	if m := nextSEP(t, w); !strings.Contains(mustJSON(t, m), "arguments.where: line 1, column 9") {
		t.Errorf("broken condition: %v; want an error naming its position", m)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
