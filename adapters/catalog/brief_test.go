package catalog

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/adapters/alertmanager"
	"github.com/mcpe-server/mcpe-server/adapters/github"
	mcpadapter "github.com/mcpe-server/mcpe-server/adapters/mcp"
	"github.com/mcpe-server/mcpe-server/adapters/slack"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// allAdapters returns a catalog with every adapter configured, an upstream
// MCP server, and types posted to /v1/events.
func allAdapters(t *testing.T) *Catalog {
	t.Helper()
	gh, err := github.New(github.Options{Publisher: fakePublisher{}, Secret: []byte("s")})
	if err != nil {
		t.Fatal(err)
	}
	sl, err := slack.New(slack.Options{Publisher: fakePublisher{}, SigningSecret: []byte("s")})
	if err != nil {
		t.Fatal(err)
	}
	am, err := alertmanager.New(alertmanager.Options{Publisher: fakePublisher{}})
	if err != nil {
		t.Fatal(err)
	}
	up, err := mcpadapter.New(mcpadapter.Options{Publisher: fakePublisher{}, Upstreams: []mcpadapter.Upstream{{Name: "docs", URL: "https://docs.example.com/mcp"}}})
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{Store: memoryStore(t), Sources: []Source{
		{Name: "ingest", Configured: true, Endpoint: "/v1/events", Description: strings.Repeat("i", 200)},
		{Name: "github", Configured: true, Endpoint: github.Endpoint, Description: strings.Repeat("g", 250), Types: gh.Catalog, Values: github.Placeholders},
		{Name: "slack", Configured: true, Endpoint: slack.Endpoint, Description: strings.Repeat("s", 200), Types: sl.Catalog},
		{Name: "alertmanager", Configured: true, Endpoint: alertmanager.Endpoint, Description: strings.Repeat("a", 120), Types: am.Catalog},
		{Name: "mcp", Configured: true, Description: strings.Repeat("m", 120), Types: up.Catalog, States: up.States},
	}})
	for _, typ := range []string{"deploy.started", "deploy.finished", "build.done"} {
		c.Observe(context.Background(), typ)
	}
	return c
}

// brief returns what events_catalog answers for pattern, and its size.
func brief(t *testing.T, c *Catalog, pattern string) (*mcpe.Catalog, int) {
	t.Helper()
	got, err := c.Get(context.Background(), mcpe.CatalogRequest{Pattern: pattern})
	if err != nil {
		t.Fatalf("%q: %v", pattern, err)
	}
	b := got.Brief(pattern)
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return b, len(raw)
}

func typeNames(c *mcpe.Catalog) []string {
	var out []string
	for _, t := range c.Types {
		out = append(out, t.Type)
	}
	return out
}

// TestBriefAffordable checks that what a model reads of the catalog costs
// a few kilobytes, with every adapter configured: the overview names the
// types; a search lists the types whose names match, described; one type
// comes with its schema and example.
func TestBriefAffordable(t *testing.T) {
	c := allAdapters(t)

	overview, size := brief(t, c, "")
	if size > 6000 {
		t.Errorf("the overview is %d bytes; want at most 6000", size)
	}
	if i := slices.IndexFunc(overview.Sources, func(s mcpe.CatalogSource) bool { return s.Name == "github" }); i < 0 ||
		!slices.Contains(overview.Sources[i].Types, "github.issues.<action>") {
		t.Errorf("the overview does not name github.issues.<action> under github: %+v", overview.Sources)
	}
	if len(overview.Types) != 0 || len(overview.SeenRecently) != 3 || !strings.Contains(overview.Note, "pattern") {
		t.Errorf("overview: types %v, seen %v, note %q; want no types described, the 3 posted, a note on patterns", typeNames(overview), overview.SeenRecently, overview.Note)
	}

	deploy, size := brief(t, c, "*deploy*")
	if size > 8000 {
		t.Errorf("*deploy* is %d bytes; want at most 8000", size)
	}
	want := []mcpe.CatalogType{
		{Source: "github", EventType: mcpe.EventType{Type: "github.deployment.<action>", Types: []string{"github.deployment.created"}}},
		{Source: "github", EventType: mcpe.EventType{Type: "github.deployment_status.<action>", Types: []string{"github.deployment_status.created"}}},
	}
	for i := range deploy.Types {
		if deploy.Types[i].Description == "" || deploy.Types[i].DataSchema != nil || deploy.Types[i].Priority != "" {
			t.Errorf("*deploy* entry %+v; want its description only", deploy.Types[i])
		}
		deploy.Types[i].Description = ""
	}
	if diff := cmp.Diff(want, deploy.Types); diff != "" {
		t.Errorf("*deploy* types mismatch (-want +got):\n%s", diff)
	}
	if len(deploy.SeenRecently) != 2 {
		t.Errorf("*deploy* lists %v posted; want deploy.started and deploy.finished", deploy.SeenRecently)
	}

	all, size := brief(t, c, "*")
	if size > 10000 || !strings.Contains(all.Note, "Narrow the pattern") {
		t.Errorf("* is %d bytes with note %q; want at most 10000 and a hint to narrow", size, all.Note)
	}

	for _, typ := range []string{"github.deployment.created", "github.issues.opened", "github.discussion.created", "alert.DiskFull.firing"} {
		one, size := brief(t, c, typ)
		if len(one.Types) != 1 || one.Types[0].DataSchema == nil || one.Types[0].Example == nil || one.Types[0].Priority == "" {
			t.Errorf("%s: %v; want one type, with its schema, example and priority", typ, typeNames(one))
		}
		if size > 8000 {
			t.Errorf("%s is %d bytes; want at most 8000", typ, size)
		}
	}
	if one, _ := brief(t, c, "github.discussion.created"); len(one.Types) == 1 && one.Types[0].Type != "github.<event>.<action>" {
		t.Errorf("github.discussion.created is described by %s; want github.<event>.<action>", one.Types[0].Type)
	}

	prs, _ := brief(t, c, "github.pull_request.*")
	if len(prs.Types) != 1 || !slices.Contains(prs.Types[0].Types, "github.pull_request.closed") || len(prs.Types[0].Types) < 15 {
		t.Errorf("github.pull_request.*: %+v; want the family with its types", prs.Types)
	}
	// merged is no action of pull_request, and github.<event>.<action> is
	// the other events.
	// pr is no event GitHub sends: github.<event>.<action> does not stand
	// for it.
	for _, p := range []string{"github.pull_request.merged", "github.pr.merged", "github.pr.*", "github.pr"} {
		if none, _ := brief(t, c, p); len(none.Types) != 0 || !strings.Contains(none.Note, "Nothing matches") {
			t.Errorf("%s: %v, note %q; want nothing, said so", p, typeNames(none), none.Note)
		}
	}
	if one, _ := brief(t, c, "github.sub_issues.parent_issue_added"); len(one.Types) != 1 || one.Types[0].Type != "github.<event>.<action>" {
		t.Errorf("github.sub_issues.parent_issue_added: %v; want github.<event>.<action>", typeNames(one))
	}
}
