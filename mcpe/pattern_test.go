package mcpe_test

import (
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

func TestParsePatternMatch(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{"github.push", []string{"github.push"}, []string{"github.pushed", "github"}},
		{"github.*", []string{"github.push", "github.issue.opened"}, []string{"github", "gitlab.push"}},
		{"*.opened", []string{"github.issue.opened"}, []string{"github.issue.closed"}},
		{"v?.released", []string{"v1.released"}, []string{"v10.released"}},
		{"v[0-9].x", []string{"v3.x"}, []string{"va.x"}},
		{"v[!0-9].x", []string{"va.x"}, []string{"v3.x"}},
		{"{push,pull_request.*}", []string{"push", "pull_request.opened"}, []string{"pull_request"}},
		{`a\*`, []string{"a*"}, []string{"ab"}},
		{"*", []string{"a", "a.b.c"}, nil},
	}
	for _, tt := range tests {
		p, err := mcpe.ParsePattern("eventTypes", tt.pattern)
		if err != nil {
			t.Fatalf("ParsePattern(%q): %v", tt.pattern, err)
		}
		for _, typ := range tt.match {
			if !p.Match(typ) {
				t.Errorf("%q does not match %q", tt.pattern, typ)
			}
		}
		for _, typ := range tt.miss {
			if p.Match(typ) {
				t.Errorf("%q matches %q", tt.pattern, typ)
			}
		}
	}
}

func TestParsePatternRefusals(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"", "eventTypes: an entry is empty"},
		{"git{hub", "eventTypes: \"git{hub\" is not a valid pattern (unclosed `{` at offset 7)"},
		{"a.[^b]", "writes a negated set as [^...]"},
		{"a b*", "contains ' ', which no event type contains"},
		{"a..b", "is neither a valid event type nor a pattern"},
		{strings.Repeat("a", mcpe.MaxPatternLength+1), "at most 256 are accepted"},
	}
	for _, tt := range tests {
		_, err := mcpe.ParsePattern("eventTypes", tt.pattern)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParsePattern(%q) = %v, want an error containing %q", tt.pattern, err, tt.want)
		}
	}
}

func TestParsePatternCost(t *testing.T) {
	tests := []struct {
		pattern string
		cost    int
	}{
		{"github.push", 0},
		{"github.*", 2},
		{"a?c", 2},
		{"{push,pull_request.*}", 4},
		{"{a,b}.{c,d}", 4},
		{"{a,{b,c}}.*", 6},
		{"{,a}{b,}", 4},
		{strings.Repeat("{a,b}", 6), 64},
	}
	for _, tt := range tests {
		p, err := mcpe.ParsePattern("eventTypes", tt.pattern)
		if err != nil {
			t.Fatalf("ParsePattern(%q): %v", tt.pattern, err)
		}
		if p.Cost() != tt.cost {
			t.Errorf("ParsePattern(%q).Cost() = %d, want %d", tt.pattern, p.Cost(), tt.cost)
		}
	}
}

// TestParsePatternBounds checks the bounds on one pattern's matching cost:
// the patterns that made each new event type cost seconds are refused.
func TestParsePatternBounds(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{strings.Repeat("{*,*}", 49) + "Zb", "has more than a million alternatives once its {...} groups are expanded; at most 64 are accepted"},
		{strings.Repeat("{a,b}", 7), "has 128 alternatives once its {...} groups are expanded; at most 64 are accepted"},
		{strings.Repeat("*a", 17), "has 17 wildcards (*, ? and [...]); at most 16 are accepted"},
		{strings.Repeat("[ab]", 17), "has 17 wildcards"},
	}
	for _, tt := range tests {
		_, err := mcpe.ParsePattern("eventTypes", tt.pattern)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParsePattern(%.30q…) = %v, want an error containing %q", tt.pattern, err, tt.want)
		}
	}
	for _, ok := range []string{strings.Repeat("{a,b}", 6), strings.Repeat("*a", 16)} {
		if _, err := mcpe.ParsePattern("eventTypes", ok); err != nil {
			t.Errorf("ParsePattern(%q) at the bounds: %v", ok, err)
		}
	}
}
