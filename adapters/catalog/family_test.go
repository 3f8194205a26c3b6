package catalog

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/adapters/alertmanager"
	mcpadapter "github.com/mcpe-server/mcpe-server/adapters/mcp"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

func TestFamilyMatcher(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		family  string
		want    bool
	}{
		{"alert.*", "alert.<alertname>.firing", true},
		{"*", "alert.<alertname>.firing", true},
		{"alert.*.firing", "alert.<alertname>.firing", true},
		{"alert.*.resolved", "alert.<alertname>.firing", false},
		{"alert.HighCPU.firing", "alert.<alertname>.firing", true},
		{"alert.HighCPU.resolved", "alert.<alertname>.firing", false},
		{"alert.KubePod*", "alert.<alertname>.firing", true},
		{"alert.HighCPU.*", "alert.<alertname>.resolved", true},
		{"*.firing", "alert.<alertname>.firing", true},
		{"*.fired", "alert.<alertname>.firing", false},
		{"github.*", "alert.<alertname>.firing", false},
		// The name is spelled after a literal start: a class or a '?'
		// before it is not.
		{"aler?.x.firin?", "alert.<alertname>.firing", false},
		{"alert.[a-z]*.firing", "alert.<alertname>.firing", false},
		{"alert.[!a].resolve[dx]", "alert.<alertname>.firing", false},
		{"{github,alert}.*.firing", "alert.<alertname>.firing", true},
		{"{github,slack}.*", "alert.<alertname>.firing", false},
		{"alert.x.{resolved,firing}", "alert.<alertname>.firing", true},
		{"alert.x.{resolved,{cleared,gone}}", "alert.<alertname>.firing", false},
		{`alert.\*.firing`, "alert.<alertname>.firing", false},
		{"mcp.docs.build.finished", "mcp.docs.<type>", true},
		{"mcp.docs.*", "mcp.docs.<type>", true},
		{"mcp.other.*", "mcp.docs.<type>", false},
		{"mcp.*.log", "mcp.docs.<type>", false},
		// A placeholder is a name the pattern spells after a literal start,
		// or leaves to a wildcard: a search for a word inside type names
		// does not find it.
		{"*deploy*", "alert.<alertname>.firing", false},
		{"*deploy*", "github.<event>.<action>", false},
		{"*.deploy.*", "github.<event>.<action>", false},
		{"github.deploy*", "github.<event>.<action>", true},
		{"github.deployment.created", "github.<event>", true},
		{"mcp.docs", "mcp.docs.<type>", false},
	} {
		p, err := subscriptions.CompilePattern(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := familyMatches(tc.family, p.Match, p.Prefix(), nil); got != tc.want {
			t.Errorf("pattern %q, family %q: %v, want %v", tc.pattern, tc.family, got, tc.want)
		}
	}
}

// TestFamilyMatcherValues checks that a placeholder whose values are known
// matches only where a pattern spells one of them, or the start of one.
func TestFamilyMatcherValues(t *testing.T) {
	values := map[string][]string{"<event>": {"discussion", "deployment_review", "label"}}
	for _, tc := range []struct {
		pattern, family string
		want            bool
	}{
		{"github.discussion.created", "github.<event>.<action>", true},
		{"github.pr.merged", "github.<event>.<action>", false},
		{"github.disc*", "github.<event>.<action>", true},
		{"github.pull*", "github.<event>.<action>", false},
		{"github.deployment_review.*", "github.<event>.<action>", true},
		{"github.label", "github.<event>", true},
		{"github.labels", "github.<event>", false},
		{"github.*", "github.<event>", true},
		{"*deploy*", "github.<event>.<action>", false},
		{"alert.HighCPU.firing", "alert.<alertname>.firing", true},
	} {
		p, err := subscriptions.CompilePattern(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := familyMatches(tc.family, p.Match, p.Prefix(), values); got != tc.want {
			t.Errorf("pattern %q, family %q: %v, want %v", tc.pattern, tc.family, got, tc.want)
		}
	}
}

// The adapters' real catalogs, as the server lists them: every type passes
// the catalog contract, and patterns find families by the types they stand
// for.
func TestAdapterCatalogs(t *testing.T) {
	am, err := alertmanager.New(alertmanager.Options{Publisher: fakePublisher{}})
	if err != nil {
		t.Fatal(err)
	}
	up, err := mcpadapter.New(mcpadapter.Options{Publisher: fakePublisher{}, Upstreams: []mcpadapter.Upstream{
		{Name: "docs", URL: "https://docs.example.com/mcp"},
		{Name: "github", Command: []string{"github-mcp-server", "stdio"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for name, types := range map[string][]mcpe.EventType{"alertmanager": am.Catalog(), "mcp": up.Catalog()} {
		if err := adaptertest.CheckCatalog(types); err != nil {
			t.Errorf("%s catalog: %v", name, err)
		}
	}
	c := New(Options{Sources: []Source{
		{Name: "alertmanager", Configured: true, Endpoint: alertmanager.Endpoint, Types: am.Catalog},
		{Name: "mcp", Configured: true, Types: up.Catalog, States: up.States},
		{Name: "github", Endpoint: "/adapters/github"},
	}})
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"alert.KubePodCrashLooping.firing", []string{"alert.<alertname>.firing"}},
		{"alert.*", []string{"alert.<alertname>.firing", "alert.<alertname>.resolved"}},
		{"mcp.docs.tools.*", []string{"mcp.docs.tools.list_changed"}},
		{"mcp.docs.*", []string{"mcp.docs.connected", "mcp.docs.disconnected", "mcp.docs.tools.list_changed",
			"mcp.docs.resources.list_changed", "mcp.docs.prompts.list_changed", "mcp.docs.resources.updated", "mcp.docs.log", "mcp.docs.<type>"}},
		{"mcp.*.resources.updated", []string{"mcp.docs.resources.updated", "mcp.github.resources.updated"}},
		{"mcp.docs.resources.updated", []string{"mcp.docs.resources.updated"}},
		{"mcp.docs.build.done", []string{"mcp.docs.<type>"}},
		{"github.*", nil},
	} {
		got, err := c.Get(context.Background(), mcpe.CatalogRequest{Pattern: tc.pattern})
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		var types []string
		for _, ct := range got.Types {
			types = append(types, ct.Type)
		}
		if diff := cmp.Diff(tc.want, types); diff != "" {
			t.Errorf("pattern %q: types mismatch (-want +got):\n%s", tc.pattern, diff)
		}
		if len(got.Sources) != 3 || got.Sources[2].Configured {
			t.Errorf("pattern %q: sources = %+v; want all three, github not configured", tc.pattern, got.Sources)
		}
	}
	// The whole catalog is what events://catalog serves: it encodes, with
	// the upstreams' states.
	got, err := c.Get(context.Background(), mcpe.CatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var back mcpe.Catalog
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if n := len(back.Sources[1].Upstreams); n != 2 {
		t.Errorf("mcp source lists %d upstream states; want 2", n)
	}
}

// FuzzFamilyMatcher: any pattern the filter language accepts is tested
// against families without a panic, and a family whose type the pattern
// matches is always kept.
func FuzzFamilyMatcher(f *testing.F) {
	for _, s := range []string{"alert.*", "{a,{b,c}}[!x]?\\*", strings.Repeat("{a,b}", 20), "alert.Kube*", "*{*,*}*"} {
		f.Add(s, "alert.<alertname>.firing")
	}
	f.Fuzz(func(t *testing.T, pattern, family string) {
		p, err := subscriptions.CompilePattern(pattern)
		if err != nil {
			return
		}
		got := familyMatches(family, p.Match, p.Prefix(), map[string][]string{"<alertname>": {"a", "ab", "Kube"}})
		if !isFamily(family) && p.Match(family) && !got {
			t.Fatalf("pattern %q matches %q, but the family test says no", pattern, family)
		}
	})
}
