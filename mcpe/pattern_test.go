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
