package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/adapters/catalog"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// subscriber is a Service that records subscriptions and answers dry runs
// with one matched event.
type subscriber struct {
	capsOnly
	subscribed []mcpe.Filter
}

func (s *subscriber) Subscribe(_ context.Context, _ string, req mcpe.SubscribeRequest) (*subscriptions.Subscription, error) {
	s.subscribed = append(s.subscribed, req.Filter)
	return &subscriptions.Subscription{Subscription: mcpe.Subscription{ID: "3f1c2a4e-8b7d-4c6e-9f0a-1b2c3d4e5f60", Filter: req.Filter}}, nil
}

func (s *subscriber) Preview(context.Context, string, mcpe.SubscribeRequest) (mcpe.DryRunResult, error) {
	return mcpe.DryRunResult{Matched: 1, Types: map[string]int{"github.push": 1}, Events: []json.RawMessage{json.RawMessage(`{"id":"e1"}`)}}, nil
}

// TestSubscribeWarnings checks that events_subscribe warns about each
// pattern that matches no type the catalog declares or saw lately, with the
// closest known type when one is close, subscribes all the same, and says
// nothing of patterns that match a known type.
func TestSubscribeWarnings(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cat := catalog.New(catalog.Options{Store: store, Sources: []catalog.Source{{Name: "github", Configured: true,
		Types: func() []mcpe.EventType {
			return []mcpe.EventType{{Type: "github.push"}, {Type: "github.issues.<action>"},
				{Type: "github.pull_request.<action>"}, {Type: "github.pull_request_review.<action>"}}
		}}}})
	cat.Observe(t.Context(), "deploy.failed")
	none := "matches no event type this server has declared or seen"
	for _, tc := range []struct {
		types []string
		want  []string
	}{
		{[]string{"github.push", "github.*", "github.issues.opened", "deploy.failed", "deploy.*"}, nil},
		{[]string{"github.pr.merged"}, []string{"github.pr.merged " + none + "; did you mean github.pull_request.<action>?"}},
		{[]string{"github.push", "github.isue.opened", "deploy.faild"}, []string{
			"github.isue.opened " + none + "; did you mean github.issues.<action>?",
			"deploy.faild " + none + "; did you mean deploy.failed?"}},
		{[]string{"billing.invoice.paid"}, []string{"billing.invoice.paid " + none}},
	} {
		svc := &subscriber{}
		set := Register(mcp.NewServer(&mcp.Implementation{Name: "test"}, nil), Options{Service: svc, Catalog: cat,
			Principal: func(context.Context, *mcp.CallToolRequest) (string, error) { return "alice", nil }})
		filter, _ := json.Marshal(map[string]any{"eventTypes": tc.types})
		for _, dryRun := range []bool{false, true} {
			args, _ := json.Marshal(map[string]any{"filter": json.RawMessage(filter), "dryRun": dryRun})
			res, err := set.CallTool(context.Background(), "alice", mcpe.ToolSubscribe, args)
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if res.IsError {
				t.Fatalf("%s: %s", args, text)
			}
			var got struct {
				ID       string   `json:"subscriptionId"`
				Matched  *int     `json:"matched"`
				Warnings []string `json:"warnings"`
			}
			if err := json.Unmarshal([]byte(text), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Warnings); diff != "" {
				t.Errorf("%s: warnings mismatch (-want +got):\n%s", args, diff)
			}
			if dryRun != (got.Matched != nil) || dryRun == (got.ID != "") {
				t.Errorf("%s: answered %s", args, text)
			}
		}
		if len(svc.subscribed) != 1 {
			t.Errorf("%v: subscribed %d times for one real subscribe and one dry run", tc.types, len(svc.subscribed))
		}
	}
}

func TestTypeDistance(t *testing.T) {
	for _, tc := range []struct {
		pattern, typ string
		want         int
	}{
		{"github.pr.merged", "github.pull_request.<action>", 6},
		{"github.pr.merged", "github.pull_request.closed", 4},
		{"alert.HighCPU.firng", "alert.<alertname>.firing", 7},
		{"github.*", "github.issues.opened", 0},
		{"github.issue.opened", "github.issues.opened", 0},
		{"deploy.faild", "deploy.failed", 0},
		{"deploy.fialed", "deploy.failed", 2},
		{"slack.message.new", "slack.message", 3},
		{"x", "a.b", 2},
	} {
		if got := typeDistance(tc.pattern, tc.typ); got != tc.want {
			t.Errorf("typeDistance(%q, %q) = %d, want %d", tc.pattern, tc.typ, got, tc.want)
		}
	}
}

// countingCatalog is a Catalog that declares nothing and counts the calls.
type countingCatalog struct{ calls int }

func (c *countingCatalog) Get(context.Context, mcpe.CatalogRequest) (*mcpe.Catalog, error) {
	c.calls++
	return &mcpe.Catalog{}, nil
}

// validating is a subscriber whose dry runs refuse a filter as the
// service does.
type validating struct{ subscriber }

func (v *validating) Subscribe(ctx context.Context, p string, req mcpe.SubscribeRequest) (*subscriptions.Subscription, error) {
	if _, err := subscriptions.CompileFilter(req.Filter); err != nil {
		return nil, err
	}
	return v.subscriber.Subscribe(ctx, p, req)
}

func (*validating) Preview(_ context.Context, _ string, req mcpe.SubscribeRequest) (mcpe.DryRunResult, error) {
	_, err := subscriptions.CompileFilter(req.Filter)
	return mcpe.DryRunResult{}, err
}

// TestWarningsBounded checks that the catalog is asked about a filter's
// patterns only once the filter is accepted: a dry run with far more
// patterns than a filter takes is refused without a look-up each, and an
// accepted one costs one per pattern and one for the suggestions.
func TestWarningsBounded(t *testing.T) {
	cat := &countingCatalog{}
	set := Register(mcp.NewServer(&mcp.Implementation{Name: "test"}, nil), Options{Service: &validating{}, Catalog: cat,
		Principal: func(context.Context, *mcp.CallToolRequest) (string, error) { return "alice", nil }})
	many := make([]string, 20000)
	for i := range many {
		many[i] = fmt.Sprintf("x%d.%s", i, strings.Repeat("y", 200))
	}
	for _, tc := range []struct {
		patterns []string
		dryRun   bool
		refused  bool
		calls    int
	}{
		{many, true, true, 0},
		{many, false, true, 0},
		{many[:mcpe.MaxFilterPatterns], true, false, mcpe.MaxFilterPatterns + 1},
		{many[:mcpe.MaxFilterPatterns], false, false, mcpe.MaxFilterPatterns + 1},
	} {
		cat.calls = 0
		args, _ := json.Marshal(map[string]any{"filter": map[string]any{"eventTypes": tc.patterns}, "dryRun": tc.dryRun})
		res, err := set.CallTool(context.Background(), "alice", mcpe.ToolSubscribe, args)
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError != tc.refused || cat.calls != tc.calls {
			t.Errorf("%d patterns, dryRun %v: refused %v after %d catalog calls; want %v after %d", len(tc.patterns), tc.dryRun,
				res.IsError, cat.calls, tc.refused, tc.calls)
		}
	}
}
