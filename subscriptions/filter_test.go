package subscriptions_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gobwas/glob"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

func TestPatternMatch(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		// Exact types match only themselves.
		{
			pattern: "github.push",
			match:   []string{"github.push"},
			noMatch: []string{"github", "github.pus", "github.push.x", "github.pushx", "Github.push", "xgithub.push"},
		},
		// "*" matches any run of characters, dots included.
		{
			pattern: "github.*",
			match:   []string{"github.push", "github.issue.opened", "github.a.b.c.d", "github.x"},
			noMatch: []string{"github", "githubx.push", "gitlab.push", "x.github.push"},
		},
		{
			pattern: "github.issue.*",
			match:   []string{"github.issue.opened", "github.issue.comment.created"},
			noMatch: []string{"github.issue", "github.issues.opened", "github.push", "github.pr.issue.opened"},
		},
		{
			pattern: "github.deployment.*",
			match:   []string{"github.deployment.created", "github.deployment.status.success"},
			noMatch: []string{"github.deployment", "github.deployments.created", "github.push"},
		},
		{
			pattern: "*",
			match:   []string{"a", "github.push", "github.issue.opened", strings.Repeat("a.", 15) + "a"},
		},
		{
			pattern: "**",
			match:   []string{"a", "github.issue.opened"},
		},
		{
			pattern: "*.opened",
			match:   []string{"github.issue.opened", "jira.opened"},
			noMatch: []string{"opened", "github.reopened", "github.opened.x"},
		},
		{
			pattern: "github.*.opened",
			match:   []string{"github.issue.opened", "github.pull_request.review.opened"},
			noMatch: []string{"github.opened", "github.issue.closed"},
		},
		{
			pattern: "github*",
			match:   []string{"github", "github.push", "githubx"},
			noMatch: []string{"gitlab", "xgithub"},
		},
		{
			pattern: "*push*",
			match:   []string{"push", "github.push", "github.push.rejected", "git.pushed"},
			noMatch: []string{"github.pull", "pus.h"},
		},
		// "?" matches exactly one character, a dot included.
		{
			pattern: "github.?ush",
			match:   []string{"github.push", "github.rush"},
			noMatch: []string{"github.ush", "github.ppush", "github.push.x"},
		},
		{
			pattern: "a?b",
			match:   []string{"a.b", "axb"},
			noMatch: []string{"ab", "a..b"},
		},
		{
			pattern: "?",
			match:   []string{"a", "Z", "_"},
			noMatch: []string{"ab", "a.b"},
		},
		// Classes and negated classes match one character.
		{
			pattern: "[abc].x",
			match:   []string{"a.x", "c.x"},
			noMatch: []string{"d.x", "ab.x", ".x", "A.x"},
		},
		{
			pattern: "v[0-9].released",
			match:   []string{"v0.released", "v9.released"},
			noMatch: []string{"v10.released", "va.released", "v.released"},
		},
		{
			pattern: "[!abc].x",
			match:   []string{"d.x", "Z.x", "..x"},
			noMatch: []string{"a.x", "c.x", "dd.x", ".x"},
		},
		{
			pattern: "[!0-9]*",
			match:   []string{"a1", "x", "build.7"},
			noMatch: []string{"1a", "7.build"},
		},
		{
			pattern: "github.[pP]ush",
			match:   []string{"github.push", "github.Push"},
			noMatch: []string{"github.bush"},
		},
		// Alternatives, nested and with wildcards inside.
		{
			pattern: "{github,gitlab}.push",
			match:   []string{"github.push", "gitlab.push"},
			noMatch: []string{"bitbucket.push", "github.pull", "githubgitlab.push"},
		},
		{
			pattern: "github.{push,pull_request.*}",
			match:   []string{"github.push", "github.pull_request.opened", "github.pull_request.review.submitted"},
			noMatch: []string{"github.pull_request", "github.pushx", "github.issue.opened"},
		},
		{
			pattern: "{a,b{c,d}}.x",
			match:   []string{"a.x", "bc.x", "bd.x"},
			noMatch: []string{"b.x", "ac.x"},
		},
		{
			pattern: "{*.created,*.deleted}",
			match:   []string{"svc1.created", "a.b.deleted"},
			noMatch: []string{"svc1.updated", "created"},
		},
		// A backslash escapes the next character.
		{
			pattern: `github.\*`,
			match:   []string{"github.*"},
			noMatch: []string{"github.push", "github.x"},
		},
		{
			pattern: `github\.push`,
			match:   []string{"github.push"},
			noMatch: []string{"githubxpush"},
		},
		{
			pattern: `a\?`,
			match:   []string{"a?"},
			noMatch: []string{"ab"},
		},
		{
			pattern: `\{a,b\}`,
			match:   []string{"{a,b}"},
			noMatch: []string{"a", "b"},
		},
		// Alternatives with wildcards in them. The glob matcher backtracks
		// through these for minutes; Pattern must answer at once.
		{
			pattern: "{*,*}{*,*}{*,*}{*,*}{*,*}{*,*}z*d",
			match:   []string{"z.d", "github.pull_request.review_comment.zd"},
			noMatch: []string{"github.pull_request.review_comment.created", strings.Repeat("a.", 127) + "d"},
		},
		{
			// As many alternatives as a pattern may have.
			pattern: strings.Repeat("{a,aa}", 6) + "*c*b",
			match:   []string{strings.Repeat("a", 40) + "cb"},
			noMatch: []string{strings.Repeat("a", 254) + "b"},
		},
		// Classes inside alternatives; "-" in a set is literal.
		{
			pattern: "{[ab-],[!x-z]}.?",
			match:   []string{"a.1", "-.x", "b.b", "w.w"},
			noMatch: []string{"x.1", "y.1", "ab.1", "a.12"},
		},
		{
			pattern: `{a\,b,c\}}.x`,
			match:   []string{"a,b.x", "c}.x"},
			noMatch: []string{"a.x", "b.x", "c.x"},
		},
		// '^' is an ordinary character where it does not open a set.
		{
			pattern: "[!^x].y",
			match:   []string{"a.y"},
			noMatch: []string{"x.y", "^.y"},
		},
		// Outside braces a comma is literal, and so are "]" and "}".
		{
			pattern: "a,b*",
			match:   []string{"a,b", "a,b.c"},
			noMatch: []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			p, err := subscriptions.CompilePattern(tt.pattern)
			if err != nil {
				t.Fatalf("CompilePattern: %v", err)
			}
			if got := p.String(); got != tt.pattern {
				t.Errorf("String() = %q, want %q", got, tt.pattern)
			}
			for _, typ := range tt.match {
				if !p.Match(typ) {
					t.Errorf("Match(%q) = false, want true", typ)
				}
				if !strings.HasPrefix(typ, p.Prefix()) {
					t.Errorf("%q matches but does not start with Prefix() %q", typ, p.Prefix())
				}
			}
			for _, typ := range tt.noMatch {
				if p.Match(typ) {
					t.Errorf("Match(%q) = true, want false", typ)
				}
			}
		})
	}
}

// TestPatternAlternativesAgreeWithGlob checks that patterns with
// alternatives, which Pattern matches with a regexp translation, match as
// gobwas/glob does.
func TestPatternAlternativesAgreeWithGlob(t *testing.T) {
	patterns := []string{
		"{a,b}", "{a,b}.c", "{,a}b", "{a,}b", "{}", "{a}", "a{b,{c,d}}", "{*,?}", "{a*,*b}.c",
		"github.{push,pull_request.*}", "{[a-c],[!b]}*", "{[ab-],x}", `{a\,b,c\}}`, `{\*,\?}`,
		"{a.b,a.*}.{c,d*}", "*{.,-}x", "a,b{c,d}", "{**,a}b", "]{a,b}", "}{a,b}",
	}
	types := []string{
		"", "a", "b", "c", "ab", "ba", "a.b", "b.c", "a.b.c", "a.c", "acd", "abd", "a,b", "c}", "*", "?",
		"github.push", "github.pull_request", "github.pull_request.opened", "-", "x", "a.x", "-x", "a.b.d",
		"a.b.dd", "a,bc", "]a", "}b", "a..x",
	}
	for _, text := range patterns {
		p, err := subscriptions.CompilePattern(text)
		if err != nil {
			t.Errorf("CompilePattern(%q): %v", text, err)
			continue
		}
		g := glob.MustCompile(text)
		for _, typ := range types {
			if got, want := p.Match(typ), g.Match(typ); got != want {
				t.Errorf("pattern %q: Match(%q) = %t, glob says %t", text, typ, got, want)
			}
		}
	}
}

func TestPatternExactAndPrefix(t *testing.T) {
	tests := []struct {
		pattern    string
		wantExact  bool
		wantPrefix string
	}{
		{"github.push", true, "github.push"},
		{"a", true, "a"},
		{"github.*", false, "github."},
		{"github.issue.*", false, "github.issue."},
		{"*", false, ""},
		{"*.opened", false, ""},
		{"github.?ush", false, "github."},
		{"v[0-9].released", false, "v"},
		{"{a,b}.x", false, ""},
		{"github.{push,pull}", false, "github."},
		{`git\hub.push`, false, "git"},
		{"a,b*", false, "a,b"},
	}
	for _, tt := range tests {
		p, err := subscriptions.CompilePattern(tt.pattern)
		if err != nil {
			t.Errorf("CompilePattern(%q): %v", tt.pattern, err)
			continue
		}
		if got := p.Exact(); got != tt.wantExact {
			t.Errorf("CompilePattern(%q).Exact() = %t, want %t", tt.pattern, got, tt.wantExact)
		}
		if got := p.Prefix(); got != tt.wantPrefix {
			t.Errorf("CompilePattern(%q).Prefix() = %q, want %q", tt.pattern, got, tt.wantPrefix)
		}
	}
}

func TestCompilePatternInvalid(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
	}{
		{"empty", ""},
		{"unclosed brace", "github.{push,pull"},
		{"unclosed bracket", "github.[pP"},
		{"empty class", "github.[]"},
		{"empty negated class", "github.[!]"},
		{"reversed range", "v[9-0]"},
		{"trailing backslash", `github.\`},
		{"space in a pattern", "github. *"},
		{"space in a type", "github push"},
		{"tab", "github.*\t"},
		{"non-ASCII in a pattern", "github.*é"},
		{"non-ASCII in a type", "github.pushé"},
		{"invalid UTF-8", "github.*\xff"},
		{"double dot type", "github..push"},
		{"trailing dot type", "github."},
		{"too long pattern", strings.Repeat("a", mcpe.MaxPatternLength) + "*"},
		{"too long type", strings.Repeat("a", mcpe.MaxPatternLength+1)},
		{"too many segments", strings.Repeat("a.", mcpe.MaxTypeSegments) + "a"},
		{"caret negation", "[^x]*"},
		{"caret negation of a range", "v[^0-9].x"},
		{"caret negation in alternatives", "{[^a],b}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := subscriptions.CompilePattern(tt.pattern)
			if err == nil {
				t.Fatalf("CompilePattern(%q) = %v, want an error", tt.pattern, p)
			}
			if field := invalidField(t, err); field != "eventTypes" {
				t.Errorf("field = %q, want %q", field, "eventTypes")
			}
		})
	}
}

func TestCompilePatternErrorText(t *testing.T) {
	help := " " + mcpe.PatternHelp
	tests := []struct {
		pattern string
		want    string
	}{
		{
			pattern: "",
			want:    `eventTypes: an entry is empty; give a type such as "github.push" or a pattern such as "github.*" ("*" matches everything)`,
		},
		{
			pattern: "github.{push,pull",
			want:    `eventTypes: "github.{push,pull" is not a valid pattern (unclosed ` + "`{`" + ` at offset 17).` + help,
		},
		{
			pattern: "github.[]",
			want:    `eventTypes: "github.[]" is not a valid pattern (could not parse range at offset 9).` + help,
		},
		{
			pattern: "github. *",
			want:    `eventTypes: "github. *" contains ' ', which no event type contains; types use letters, digits, '_', '-' and '.'`,
		},
		{
			pattern: "github.*é",
			want:    `eventTypes: "github.*é" contains 'é', which no event type contains; types use letters, digits, '_', '-' and '.'`,
		},
		{
			pattern: "github push",
			want: `eventTypes: "github push" is neither a valid event type nor a pattern: "github push" contains ' '; ` +
				`a type is dot-separated segments of letters, digits, '_' and '-', such as "github.issue.opened".` + help,
		},
		{
			pattern: "svc[^0].created",
			want: `eventTypes: "svc[^0].created" writes a negated set as [^...]; here it is [!...] ("[!0-9]" matches one character that is not a digit), ` +
				`and [^...] would match a literal '^', which no event type contains`,
		},
		{
			pattern: strings.Repeat("a", 257),
			want:    `eventTypes: an entry is 257 characters long; at most 256 are accepted`,
		},
	}
	for _, tt := range tests {
		_, err := subscriptions.CompilePattern(tt.pattern)
		if err == nil {
			t.Errorf("CompilePattern(%q) = nil error, want %q", tt.pattern, tt.want)
			continue
		}
		if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
			t.Errorf("CompilePattern(%q) mismatch (-want +got):\n%s", tt.pattern, diff)
		}
	}
}

// event returns a normalized event for the filter tests.
func event(t testing.TB, typ string, priority mcpe.Priority, tags ...string) *mcpe.Event {
	t.Helper()
	ev := &mcpe.Event{
		ID:       testEventID,
		Type:     typ,
		Metadata: mcpe.Metadata{Priority: priority, Tags: tags},
	}
	if err := subscriptions.NormalizeEvent(ev, testNow); err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	return ev
}

// TestFilterMCPEExamples checks the matching rules of MCPE section 5, one
// part at a time and combined.
func TestFilterMCPEExamples(t *testing.T) {
	type check struct {
		ev   *mcpe.Event
		want bool
	}
	tests := []struct {
		name   string
		filter mcpe.Filter
		checks []check
	}{
		{
			name:   "eventTypes exact match",
			filter: mcpe.Filter{EventTypes: []string{"github.push"}},
			checks: []check{
				{event(t, "github.push", ""), true},
				{event(t, "github.push.forced", ""), false},
				{event(t, "github.issue.opened", ""), false},
			},
		},
		{
			name:   "eventTypes wildcard github.*",
			filter: mcpe.Filter{EventTypes: []string{"github.*"}},
			checks: []check{
				{event(t, "github.push", ""), true},
				{event(t, "github.issue.opened", ""), true},
				{event(t, "github", ""), false},
				{event(t, "slack.message", ""), false},
			},
		},
		{
			name:   "eventTypes any entry matches",
			filter: mcpe.Filter{EventTypes: []string{"github.push", "slack.*"}},
			checks: []check{
				{event(t, "github.push", ""), true},
				{event(t, "slack.message", ""), true},
				{event(t, "github.issue.opened", ""), false},
			},
		},
		{
			name:   "tags any tag matches (OR)",
			filter: mcpe.Filter{Tags: []string{"ci", "deploy"}},
			checks: []check{
				{event(t, "a", "", "ci"), true},
				{event(t, "a", "", "deploy"), true},
				{event(t, "a", "", "frontend", "deploy"), true},
				{event(t, "a", "", "ci", "deploy"), true},
				{event(t, "a", "", "frontend"), false},
				{event(t, "a", "", "CI"), false},
				{event(t, "a", ""), false},
			},
		},
		{
			name:   "priority must be in list",
			filter: mcpe.Filter{Priority: []mcpe.Priority{"high", "critical"}},
			checks: []check{
				{event(t, "a", "high"), true},
				{event(t, "a", "critical"), true},
				{event(t, "a", "normal"), false},
				{event(t, "a", "low"), false},
				// No priority is normal.
				{event(t, "a", ""), false},
			},
		},
		{
			name:   "priority normal matches the default",
			filter: mcpe.Filter{Priority: []mcpe.Priority{"normal"}},
			checks: []check{
				{event(t, "a", ""), true},
				{event(t, "a", "high"), false},
			},
		},
		{
			name: "combined example (AND)",
			filter: mcpe.Filter{
				EventTypes: []string{"github.push", "github.deployment.*", "slack.message"},
				Tags:       []string{"ci", "deploy"},
				Priority:   []mcpe.Priority{"high", "critical"},
			},
			checks: []check{
				{event(t, "github.push", "high", "ci"), true},
				{event(t, "github.deployment.created", "critical", "deploy"), true},
				{event(t, "github.deployment.status.success", "high", "frontend", "deploy"), true},
				{event(t, "slack.message", "critical", "ci"), true},
				// Each part failing on its own.
				{event(t, "github.issue.opened", "high", "ci"), false},
				{event(t, "github.deployment", "high", "ci"), false},
				{event(t, "slack.message.edited", "high", "ci"), false},
				{event(t, "github.push", "normal", "ci"), false},
				{event(t, "github.push", "low", "deploy"), false},
				{event(t, "github.push", "high", "frontend"), false},
				{event(t, "github.push", "high"), false},
				// All failing.
				{event(t, "jira.ticket.created", "low"), false},
			},
		},
		{
			name:   "everything",
			filter: mcpe.Filter{EventTypes: []string{"*"}},
			checks: []check{
				{event(t, "a", "low"), true},
				{event(t, "github.issue.opened", "critical", "x"), true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := subscriptions.CompileFilter(tt.filter)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			for _, c := range tt.checks {
				if got := m.Match(c.ev); got != c.want {
					t.Errorf("Match(type %q, priority %q, tags %q) = %t, want %t",
						c.ev.Type, c.ev.Metadata.Priority, c.ev.Metadata.Tags, got, c.want)
				}
			}
		})
	}
}

func TestFilterCompileFromJSON(t *testing.T) {
	var f mcpe.Filter
	body := `{"eventTypes": ["github.push", "github.deployment.*", "slack.message"],
		"tags": ["ci", "deploy"], "priority": ["high", "critical"]}`
	if err := json.Unmarshal([]byte(body), &f); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	m, err := subscriptions.CompileFilter(f)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if !m.Match(event(t, "github.deployment.created", "high", "deploy")) {
		t.Errorf("the MCPE example filter does not match a high-priority deploy event")
	}
	var got []string
	for _, p := range m.Patterns() {
		got = append(got, p.String())
	}
	if diff := cmp.Diff(f.EventTypes, got); diff != "" {
		t.Errorf("Patterns() mismatch (-want +got):\n%s", diff)
	}
}

func TestFilterCompileDeduplicatesPatterns(t *testing.T) {
	m, err := subscriptions.CompileFilter(mcpe.Filter{EventTypes: []string{"a.*", "b", "a.*", "b", "c"}})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	var got []string
	for _, p := range m.Patterns() {
		got = append(got, p.String())
	}
	if diff := cmp.Diff([]string{"a.*", "b", "c"}, got); diff != "" {
		t.Errorf("Patterns() mismatch (-want +got):\n%s", diff)
	}
}

func TestFilterCompileTagsOnlyMatchesAnyType(t *testing.T) {
	m, err := subscriptions.CompileFilter(mcpe.Filter{Tags: []string{"ci"}})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if n := len(m.Patterns()); n != 0 {
		t.Errorf("len(Patterns()) = %d, want 0 for a filter without eventTypes", n)
	}
	for _, typ := range []string{"a", "github.push", "x.y.z"} {
		if !m.Match(event(t, typ, "", "ci")) {
			t.Errorf("tags-only filter does not match type %q", typ)
		}
	}
}

func TestFilterCompileInvalid(t *testing.T) {
	tests := []struct {
		name   string
		filter mcpe.Filter
		want   string // the whole error text
	}{
		{
			name:   "empty filter",
			filter: mcpe.Filter{},
			want:   `filter: is empty; give at least one of eventTypes, tags, priority or where. To receive every event, use {"eventTypes": ["*"]}`,
		},
		{
			name:   "empty eventTypes",
			filter: mcpe.Filter{EventTypes: []string{}},
			want:   `filter.eventTypes: is an empty list; give at least one type or pattern such as "github.*", or leave eventTypes out to match any type`,
		},
		{
			name:   "empty tags",
			filter: mcpe.Filter{EventTypes: []string{"a"}, Tags: []string{}},
			want:   `filter.tags: is an empty list; give at least one tag, or leave tags out to match events with any tags`,
		},
		{
			name:   "empty priority",
			filter: mcpe.Filter{Tags: []string{"a"}, Priority: []mcpe.Priority{}},
			want:   `filter.priority: is an empty list; give at least one of "low", "normal", "high" or "critical", or leave priority out to match every priority`,
		},
		{
			name:   "unknown priority",
			filter: mcpe.Filter{Priority: []mcpe.Priority{"urgent"}},
			want:   `filter.priority[0]: "urgent" is not a priority; use "low", "normal", "high" or "critical"`,
		},
		{
			name:   "second priority unknown",
			filter: mcpe.Filter{Priority: []mcpe.Priority{"high", "High"}},
			want:   `filter.priority[1]: "High" is not a priority; use "low", "normal", "high" or "critical"`,
		},
		{
			name:   "too many eventTypes",
			filter: mcpe.Filter{EventTypes: numberedTypes(mcpe.MaxFilterPatterns + 1)},
			want:   `filter.eventTypes: has 65 entries; at most 64 are accepted. Patterns such as "github.*" or "{a,b}.*" cover many types at once`,
		},
		{
			name:   "bad pattern names its index",
			filter: mcpe.Filter{EventTypes: []string{"github.push", "github.{push"}},
			want: `filter.eventTypes[1]: "github.{push" is not a valid pattern (unclosed ` + "`{`" + ` at offset 12). ` +
				mcpe.PatternHelp,
		},
		{
			name:   "empty pattern",
			filter: mcpe.Filter{EventTypes: []string{"a", "b", ""}},
			want:   `filter.eventTypes[2]: an entry is empty; give a type such as "github.push" or a pattern such as "github.*" ("*" matches everything)`,
		},
		{
			name:   "empty tag",
			filter: mcpe.Filter{Tags: []string{"ci", ""}},
			want:   `filter.tags[1]: is empty; a tag is a non-empty string such as "frontend"`,
		},
		{
			name:   "too many tags",
			filter: mcpe.Filter{Tags: manyTags(mcpe.MaxTags + 1)},
			want:   `filter.tags: has 33 tags; at most 32 are accepted`,
		},
		{
			name:   "tag too long",
			filter: mcpe.Filter{Tags: []string{strings.Repeat("t", mcpe.MaxTagLength+1)}},
			want:   `filter.tags[0]: is 129 characters long; at most 128 are accepted`,
		},
		{
			name:   "tag with control character",
			filter: mcpe.Filter{Tags: []string{"a\nb"}},
			want:   `filter.tags[0]: "a\nb" contains a control character`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := subscriptions.CompileFilter(tt.filter)
			if err == nil {
				t.Fatalf("Compile = %v, want error %q", m, tt.want)
			}
			invalidField(t, err)
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterCompileInvalidFromJSON(t *testing.T) {
	tests := []struct {
		body      string
		wantField string
	}{
		{`{}`, "filter"},
		{`{"eventTypes": null}`, "filter"},
		{`{"eventTypes": []}`, "filter.eventTypes"},
		{`{"tags": []}`, "filter.tags"},
		{`{"priority": []}`, "filter.priority"},
		{`{"priority": ["HIGH"]}`, "filter.priority[0]"},
		{`{"eventTypes": ["github.*"], "priority": ["high", "urgent"]}`, "filter.priority[1]"},
		{`{"eventTypes": ["github.[push"]}`, "filter.eventTypes[0]"},
	}
	for _, tt := range tests {
		var f mcpe.Filter
		if err := json.Unmarshal([]byte(tt.body), &f); err != nil {
			t.Fatalf("unmarshal %s: %v", tt.body, err)
		}
		_, err := subscriptions.CompileFilter(f)
		if err == nil {
			t.Errorf("Compile(%s) = nil error, want one for %s", tt.body, tt.wantField)
			continue
		}
		if field := invalidField(t, err); field != tt.wantField {
			t.Errorf("Compile(%s): field = %q, want %q", tt.body, field, tt.wantField)
		}
	}
}

func TestFilterCompileLimitsInclusive(t *testing.T) {
	f := mcpe.Filter{
		EventTypes: numberedTypes(mcpe.MaxFilterPatterns),
		Tags:       manyTags(mcpe.MaxTags),
		Priority:   mcpe.Priorities,
	}
	f.EventTypes[0] = strings.Repeat("a", mcpe.MaxPatternLength-1) + "*"
	if _, err := subscriptions.CompileFilter(f); err != nil {
		t.Errorf("Compile at the limits: %v", err)
	}
}

func numberedTypes(n int) []string {
	types := make([]string, n)
	for i := range types {
		types[i] = fmt.Sprintf("svc%d.created", i)
	}
	return types
}

func FuzzCompileFilter(f *testing.F) {
	// parts selects the parts of the filter: 1 eventTypes, 2 tags,
	// 4 priority; with 8 an empty string is an explicitly empty list. The
	// lists are newline-separated.
	f.Add(uint8(7), "github.push\ngithub.deployment.*\nslack.message", "ci\ndeploy", "high\ncritical", "github.deployment.created", "ci")
	f.Add(uint8(1), "github.*", "", "", "github.issue.opened", "")
	f.Add(uint8(1), "*", "", "", "a", "")
	f.Add(uint8(1), "github.?ush\n[abc].x\n[!0-9]*", "", "", "github.push", "")
	f.Add(uint8(3), "{github,gitlab}.{push,pull_request.*}", "x", "", "gitlab.pull_request.opened", "x")
	f.Add(uint8(1), `github.\*\na\.b`, "", "", "github.*", "")
	f.Add(uint8(2), "", "frontend", "", "a", "frontend")
	f.Add(uint8(4), "", "", "low\nurgent", "a", "")
	f.Add(uint8(9), "", "", "", "a", "")
	f.Add(uint8(1), "github.{push", "", "", "github.push", "")
	f.Add(uint8(1), "a]b*\n}\n{}", "", "", "a]b", "")
	f.Add(uint8(0), "", "", "", "a", "")
	f.Fuzz(func(t *testing.T, parts uint8, types, tags, priorities, evType, evTag string) {
		list := func(s string) []string {
			if s == "" && parts&8 != 0 {
				return []string{}
			}
			return strings.Split(s, "\n")
		}
		var flt mcpe.Filter
		if parts&1 != 0 {
			flt.EventTypes = list(types)
		}
		if parts&2 != 0 {
			flt.Tags = list(tags)
		}
		if parts&4 != 0 {
			flt.Priority = []mcpe.Priority{}
			for _, p := range list(priorities) {
				flt.Priority = append(flt.Priority, mcpe.Priority(p))
			}
		}

		m, err := subscriptions.CompileFilter(flt)
		valid := referenceValidFilter(flt)
		if err != nil {
			var ie *mcpe.InvalidError
			if !errors.As(err, &ie) || !strings.HasPrefix(ie.Field, "filter") || ie.Message == "" {
				t.Fatalf("Compile(%+v) = %#v, want an *InvalidError for a filter field", flt, err)
			}
			if valid {
				t.Fatalf("Compile(%+v) = %v, but the reference finds the filter valid", flt, err)
			}
			return
		}
		if !valid {
			t.Fatalf("Compile(%+v) succeeded, but the reference finds the filter invalid", flt)
		}

		// The reference: every pattern compiled on its own, and the parts
		// checked one by one.
		var patterns []subscriptions.Pattern
		for _, text := range flt.EventTypes {
			p, err := subscriptions.CompilePattern(text)
			if err != nil {
				t.Fatalf("Compile accepted %q but CompilePattern did not: %v", text, err)
			}
			patterns = append(patterns, p)
		}
		candidates := []string{evType, "a", "github.push", "svc1.created"}
		for _, p := range patterns {
			candidates = append(candidates, p.String(), p.Prefix(), p.Prefix()+"x", p.Prefix()+"x.y", p.String()+".x")
		}
		for _, p := range patterns {
			checkPattern(t, p, candidates)
		}

		tagSets := [][]string{nil, {evTag}, {"zzz", evTag}}
		if len(flt.Tags) > 0 {
			tagSets = append(tagSets, []string{flt.Tags[len(flt.Tags)-1]})
		}
		entry, err := subscriptions.NewEntry(&subscriptions.Subscription{Subscription: mcpe.Subscription{ID: "s", Filter: flt}})
		if err != nil {
			t.Fatalf("NewEntry: %v", err)
		}
		x := subscriptions.NewIndex(&subscriptions.IndexOptions{CacheSize: 4})
		x.Put(entry)

		for _, typ := range candidates {
			for _, prio := range append(slices.Clone(mcpe.Priorities), "", "urgent") {
				for _, evTags := range tagSets {
					ev := &mcpe.Event{Type: typ, Metadata: mcpe.Metadata{Priority: prio, Tags: evTags}}
					want := (len(patterns) == 0 || slices.ContainsFunc(patterns, func(p subscriptions.Pattern) bool { return p.Match(typ) })) &&
						(flt.Priority == nil || slices.Contains(flt.Priority, prio)) &&
						(flt.Tags == nil || slices.ContainsFunc(evTags, func(tag string) bool { return slices.Contains(flt.Tags, tag) }))
					if got := m.Match(ev); got != want {
						t.Fatalf("filter %+v, event type %q priority %q tags %q: Match = %t, reference %t",
							flt, typ, prio, evTags, got, want)
					}
					if got := len(x.Match(ev)) == 1; got != want {
						t.Fatalf("filter %+v, event type %q priority %q tags %q: Index.Match found it %t, reference %t",
							flt, typ, prio, evTags, got, want)
					}
				}
			}
		}
	})
}

// checkPattern checks what the index relies on and what PatternHelp
// promises: an exact pattern matches exactly its own text, every match starts
// with Prefix, and a pattern whose only wildcards are "*" and "?" matches
// like the regular expression with ".*" and "." for them.
func checkPattern(t *testing.T, p subscriptions.Pattern, candidates []string) {
	t.Helper()
	text := p.String()
	if !strings.HasPrefix(text, p.Prefix()) {
		t.Fatalf("pattern %q: Prefix %q is not a prefix of the text", text, p.Prefix())
	}
	if p.Exact() {
		if p.Prefix() != text {
			t.Fatalf("exact pattern %q: Prefix = %q, want the whole text", text, p.Prefix())
		}
		if err := mcpe.ValidateType(text); err != nil {
			t.Fatalf("exact pattern %q is not a valid type: %v", text, err)
		}
	}
	re := simpleGlobRegexp(text)
	// Patterns with alternatives are matched by a regexp translation; check
	// it against glob itself where glob is quick enough to ask.
	var g *glob.Pattern
	if !p.Exact() && strings.Count(text, "{") <= 2 && strings.Count(text, "*") <= 4 {
		g = glob.MustCompile(text)
	}
	for _, s := range candidates {
		got := p.Match(s)
		if p.Exact() && got != (s == text) {
			t.Fatalf("exact pattern %q: Match(%q) = %t", text, s, got)
		}
		if got && !strings.HasPrefix(s, p.Prefix()) {
			t.Fatalf("pattern %q matches %q, which does not start with Prefix %q", text, s, p.Prefix())
		}
		if re != nil && got != re.MatchString(s) {
			t.Fatalf("pattern %q: Match(%q) = %t, regexp %s says %t", text, s, got, re, !got)
		}
		if g != nil && got != g.Match(s) {
			t.Fatalf("pattern %q: Match(%q) = %t, glob says %t", text, s, got, !got)
		}
	}
}

// simpleGlobRegexp translates a pattern whose only meta characters are "*"
// and "?" into a regular expression, or returns nil for any other pattern.
func simpleGlobRegexp(pattern string) *regexp.Regexp {
	if strings.ContainsAny(pattern, `[]{}\`) {
		return nil
	}
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`)$`)
	return regexp.MustCompile(b.String())
}

// referenceValidFilter states the validation rules of Filter.Compile plainly.
func referenceValidFilter(f mcpe.Filter) bool {
	if f.EventTypes == nil && f.Tags == nil && f.Priority == nil {
		return false
	}
	if f.EventTypes != nil {
		if len(f.EventTypes) == 0 || len(f.EventTypes) > mcpe.MaxFilterPatterns {
			return false
		}
		for _, text := range f.EventTypes {
			if _, err := subscriptions.CompilePattern(text); err != nil {
				return false
			}
		}
	}
	if f.Tags != nil {
		if len(f.Tags) == 0 || len(f.Tags) > mcpe.MaxTags {
			return false
		}
		for _, tag := range f.Tags {
			if strings.TrimSpace(tag) == "" || len(tag) > mcpe.MaxTagLength {
				return false
			}
			if strings.ContainsFunc(tag, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				return false
			}
		}
	}
	if f.Priority != nil {
		if len(f.Priority) == 0 {
			return false
		}
		for _, p := range f.Priority {
			if !slices.Contains(mcpe.Priorities, p) {
				return false
			}
		}
	}
	return true
}
