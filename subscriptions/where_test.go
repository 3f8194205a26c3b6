package subscriptions_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

const mergedInAPI = `data.pull_request.merged == true && data.repository.full_name == "acme/api"`

// prEvent is a pull request closed in repo, merged or not.
func prEvent(repo string, merged bool) mcpe.Event {
	data, _ := json.Marshal(map[string]any{"pull_request": map[string]any{"merged": merged}, "repository": map[string]any{"full_name": repo}})
	return mcpe.Event{Type: "github.pull_request.closed", Data: data}
}

func whereFilter(where string) mcpe.Filter {
	return mcpe.Filter{EventTypes: []string{"github.pull_request.closed"}, Where: where}
}

func TestWhereCompileErrors(t *testing.T) {
	for _, tc := range []struct{ where, want string }{
		{`data.pull_request.merged ==`, "line 1, column 28: Syntax error: mismatched input '<EOF>' expecting"},
		{"type == \"a\" &&\n  data.x ==== 1", "line 2, column 12: Syntax error"},
		{`pull_request.merged == true`, "line 1, column 1: undeclared reference to 'pull_request'"},
		{`data.pull_request.merged`, "is a dyn, not a condition"},
		{`priority + "x"`, "is a string, not a condition"},
		{`size(tags) == "2"`, "line 1, column 12: found no matching overload for '_==_'"},
		{strings.Repeat(" ", subscriptions.MaxWhereBytes-4) + "true", ""},
		{strings.Repeat(" ", subscriptions.MaxWhereBytes-3) + "true", "is 1025 bytes long; at most 1024 are accepted"},
		{strings.Repeat("(", 500) + "true" + strings.Repeat(")", 500), "expression recursion limit exceeded"},
		// Each level multiplies by the size of a list (counted as 256).
		{`data.a.exists(x, data.b.exists(y, x == y))`, "over the limit of 1000"},
		{`data.a.exists(x, x.contains(data.b))`, "over the limit of 1000"},
	} {
		_, err := subscriptions.CompileFilter(whereFilter(tc.where))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%.40q: %v; want it accepted", tc.where, err)
			}
			continue
		}
		if err == nil || invalidField(t, err) != "filter.where" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.40q: error %v; want filter.where containing %q", tc.where, err, tc.want)
		}
	}
}

func TestWhereMatches(t *testing.T) {
	tagged := prEvent("acme/api", true)
	tagged.Metadata = mcpe.Metadata{Tags: []string{"deploy"}, Priority: mcpe.PriorityHigh}
	for _, tc := range []struct {
		where string
		ev    mcpe.Event
		want  bool
	}{
		{mergedInAPI, prEvent("acme/api", true), true},
		{mergedInAPI, prEvent("acme/api", false), false},
		{mergedInAPI, prEvent("acme/web", true), false},
		// A field the event lacks is false, not an error, whichever way the
		// condition uses it.
		{mergedInAPI, mcpe.Event{Type: "github.pull_request.closed", Data: json.RawMessage(`{}`)}, false},
		{`data.missing != 1`, prEvent("acme/api", true), false},
		{`!(data.pull_request.missing == true)`, prEvent("acme/api", true), false},
		{`!has(data.review) && has(data.pull_request.merged)`, prEvent("acme/api", true), true},
		{`"deploy" in tags && priority == "high" && type.startsWith("github.")`, tagged, true},
		{`"deploy" in tags`, prEvent("acme/api", true), false},
		// A condition alone matches any type.
		{`type.endsWith(".closed")`, prEvent("acme/api", true), true},
		// Past the cost limit at run time (a string far longer than the
		// estimate assumed): no match, not an error.
		{`data.s.contains("xxxxxxxxxx")`, mcpe.Event{Type: "github.pull_request.closed", Data: json.RawMessage(`{"s":"` + strings.Repeat("x", 20000) + `"}`)}, false},
		{`data.s.contains("xxxxxxxxxx")`, mcpe.Event{Type: "github.pull_request.closed", Data: json.RawMessage(`{"s":"` + strings.Repeat("x", 2000) + `"}`)}, true},
	} {
		m, err := subscriptions.CompileFilter(mcpe.Filter{Where: tc.where})
		if err != nil {
			t.Fatalf("%q: %v", tc.where, err)
		}
		if got := m.Match(&tc.ev); got != tc.want {
			t.Errorf("%q on %.60s: %v, want %v", tc.where, tc.ev.Data, got, tc.want)
		}
	}
}

func TestWhereRoutes(t *testing.T) {
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	ctx := context.Background()
	merged := f.subscribe("alice", mcpe.SubscribeRequest{Filter: whereFilter(mergedInAPI)})
	all := f.subscribe("bob", every("github.pull_request.closed"))
	for _, ev := range []mcpe.Event{prEvent("acme/api", false), prEvent("acme/web", true), {Type: "github.pull_request.closed", Data: json.RawMessage(`{"x":1}`)}, prEvent("acme/api", true)} {
		if _, err := f.svc.Publish(ctx, ev); err != nil {
			t.Fatalf("publish %s: %v", ev.Data, err)
		}
	}
	want := []string{"bob " + all.ID, "bob " + all.ID, "bob " + all.ID, "alice " + merged.ID, "bob " + all.ID}
	if diff := cmp.Diff(want, f.rec.delivered()); diff != "" {
		t.Errorf("deliveries mismatch (-want +got):\n%s", diff)
	}
}

func TestWhereUpdate(t *testing.T) {
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	ctx := context.Background()
	sub := f.subscribe("alice", mcpe.SubscribeRequest{Filter: whereFilter(mergedInAPI)})
	bad := whereFilter(`data.x >`)
	if _, err := f.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID, Filter: &bad}); err == nil || !strings.Contains(err.Error(), "line 1, column 9") {
		t.Fatalf("update to a broken condition: %v; want a refusal naming its position", err)
	}
	web := whereFilter(`data.repository.full_name == "acme/web"`)
	got, err := f.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID, Filter: &web})
	if err != nil || got.Filter.Where != web.Where {
		t.Fatalf("update = %+v, %v; want the new condition", got, err)
	}
	for _, ev := range []mcpe.Event{prEvent("acme/api", true), prEvent("acme/web", false)} {
		if _, err := f.svc.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"alice " + sub.ID}, f.rec.delivered()); diff != "" {
		t.Errorf("deliveries mismatch (-want +got):\n%s", diff)
	}
}

func TestWhereSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	f := newFixture(t, path, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	sub := f.subscribe("alice", mcpe.SubscribeRequest{Filter: whereFilter(mergedInAPI)})
	f.stop()
	f2 := newFixture(t, path, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	got, err := f2.svc.Get(context.Background(), "alice", sub.ID)
	if err != nil || got.Filter.Where != mergedInAPI {
		t.Fatalf("after restart: %+v, %v; want the condition kept", got, err)
	}
	for _, ev := range []mcpe.Event{prEvent("acme/api", false), prEvent("acme/api", true)} {
		if _, err := f2.svc.Publish(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"alice " + sub.ID}, f2.rec.delivered()); diff != "" {
		t.Errorf("deliveries after restart mismatch (-want +got):\n%s", diff)
	}
}

// TestWhereCostBudget checks that conditions count towards the principal's
// MaxPatternCost, so that no principal can make routing slow with many of
// them, even on exact types that cost nothing.
func TestWhereCostBudget(t *testing.T) {
	f := newFixture(t, subscriptionsMemory, clocktest.NewFake(svcStart), subscriptions.ServiceOptions{MaxPatternCost: 1200})
	ctx := context.Background()
	heavy := whereFilter(`"a" in data.a && "b" in data.b`) // about 2 × 256
	first := f.subscribe("alice", mcpe.SubscribeRequest{Filter: heavy})
	var err error
	for range 3 {
		if _, err = f.svc.Subscribe(ctx, "alice", mcpe.SubscribeRequest{Filter: heavy}); err != nil {
			break
		}
	}
	if err == nil || invalidField(t, err) != "filter.eventTypes" || !strings.Contains(err.Error(), "a where condition adds its estimated cost") {
		t.Fatalf("conditions over the budget: %v; want a refusal", err)
	}
	f.subscribe("bob", mcpe.SubscribeRequest{Filter: heavy}) // each principal has its own budget
	// Replacing a condition counts the new one instead of the old one.
	cheap := whereFilter(mergedInAPI)
	if _, err := f.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: first.ID, Filter: &cheap}); err != nil {
		t.Errorf("an update within the budget was refused: %v", err)
	}
	if _, err := f.svc.Subscribe(ctx, "alice", mcpe.SubscribeRequest{Filter: heavy}); err != nil {
		t.Errorf("a condition within the budget freed by the update was refused: %v", err)
	}
}

// TestWhereWithHandler checks that a handler's subscription runs only for
// the events its condition holds for.
func TestWhereWithHandler(t *testing.T) {
	f, _ := handlerFixture(t, mcpe.HandlerBash)
	ctx := context.Background()
	sub := f.subscribe("alice", mcpe.SubscribeRequest{Filter: whereFilter(mergedInAPI), Handler: &mcpe.HandlerSpec{Type: mcpe.HandlerBash, Command: "notify"}})
	for _, ev := range []mcpe.Event{prEvent("acme/api", false), prEvent("acme/api", true)} {
		if _, err := f.svc.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"alice " + sub.ID}, f.rec.delivered()); diff != "" {
		t.Errorf("deliveries mismatch (-want +got):\n%s", diff)
	}
}

func BenchmarkWhere(b *testing.B) {
	m, err := subscriptions.CompileFilter(whereFilter(mergedInAPI))
	if err != nil {
		b.Fatal(err)
	}
	ev := prEvent("acme/api", true)
	for b.Loop() {
		if !m.Match(&ev) {
			b.Fatal("no match")
		}
	}
}
