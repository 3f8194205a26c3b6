package mcpe_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

func TestValidateType(t *testing.T) {
	valid := []string{
		"a",
		"github.push",
		"github.issue.opened",
		"Slack.Message_Posted",
		"ci-build.v2.finished",
		"a-.b--c",
		"0.1",
		"_._",
		strings.Repeat("a", mcpe.MaxTypeLength),
		strings.Repeat("a.", mcpe.MaxTypeSegments-1) + "a",
	}
	for _, typ := range valid {
		if err := mcpe.ValidateType(typ); err != nil {
			t.Errorf("ValidateType(%q) = %v, want nil", typ, err)
		}
	}

	invalid := []struct {
		name string
		typ  string
	}{
		{"empty", ""},
		{"only a dot", "."},
		{"leading dot", ".github.push"},
		{"trailing dot", "github.push."},
		{"double dot", "github..push"},
		{"space", "github push"},
		{"slash", "github/push"},
		{"colon", "github:push"},
		{"wildcard", "github.*"},
		{"non-ASCII", "café.opened"},
		{"control character", "github\npush"},
		{"too long", strings.Repeat("a", mcpe.MaxTypeLength+1)},
		{"too many segments", strings.Repeat("a.", mcpe.MaxTypeSegments) + "a"},
		// A segment that starts with '-' would read as an option where a
		// handler passes the type to a program.
		{"leading dash", "-rf"},
		{"dash after a dot", "github.--output"},
		{"dash segment", "a.-"},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			err := mcpe.ValidateType(tt.typ)
			if err == nil {
				t.Fatalf("ValidateType(%q) = nil, want an error", tt.typ)
			}
			if field := invalidField(t, err); field != "type" {
				t.Errorf("field = %q, want %q", field, "type")
			}
		})
	}
}

func TestValidateTypeErrorText(t *testing.T) {
	tests := []struct {
		typ  string
		want string
	}{
		{"", `type: is empty; give a dot-separated name such as "github.issue.opened"`},
		{"github..push", `type: "github..push" has an empty segment; a type is dot-separated segments such as "github.issue.opened", with no leading, trailing or doubled dots`},
		{".github", `type: ".github" has an empty segment; a type is dot-separated segments such as "github.issue.opened", with no leading, trailing or doubled dots`},
		{"github push", `type: "github push" contains ' '; a type is dot-separated segments of letters, digits, '_' and '-', such as "github.issue.opened"`},
		// The whole character is named, not the first byte of its encoding.
		{"café", `type: "café" contains 'é'; a type is dot-separated segments of letters, digits, '_' and '-', such as "github.issue.opened"`},
		{strings.Repeat("a", 300), `type: is 300 characters long; at most 256 are accepted`},
		{"ci.-x.done", `type: "ci.-x.done" has a segment that starts with '-' ("-x"); a segment starts with a letter, digit or '_', so that no type reads as a command-line option`},
		{strings.Repeat("a.", 16) + "a", `type: "` + strings.Repeat("a.", 16) + `a" has 17 segments; at most 16 are accepted`},
	}
	for _, tt := range tests {
		err := mcpe.ValidateType(tt.typ)
		if err == nil {
			t.Errorf("ValidateType(%q) = nil, want %q", tt.typ, tt.want)
			continue
		}
		if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
			t.Errorf("ValidateType(%q) mismatch (-want +got):\n%s", tt.typ, diff)
		}
	}
}

func TestPriorityValid(t *testing.T) {
	for _, p := range mcpe.Priorities {
		if !p.Valid() {
			t.Errorf("%q.Valid() = false, want true", p)
		}
	}
	for _, p := range []mcpe.Priority{"", "urgent", "Normal", " low"} {
		if p.Valid() {
			t.Errorf("%q.Valid() = true, want false", p)
		}
	}
}

// invalidField returns the field of err, which must be an *InvalidError.
func invalidField(t *testing.T, err error) string {
	t.Helper()
	var ie *mcpe.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T) is not an *InvalidError", err, err)
	}
	if ie.Message == "" {
		t.Errorf("error for field %q has an empty message", ie.Field)
	}
	return ie.Field
}

func TestDescribeJSON(t *testing.T) {
	for in, want := range map[string]string{
		``:            "empty",
		" \n\t":       "empty",
		`{`:           "invalid JSON",
		`{} {}`:       "invalid JSON",
		`nul`:         "invalid JSON",
		`{"a": 1}`:    "an object",
		` [1, 2] `:    "an array",
		`"x"`:         "a string",
		`true`:        "a boolean",
		`false`:       "a boolean",
		`null`:        "null",
		`-1.5e3`:      "a number",
		"\n 0 \n":     "a number",
		`"\u00e9<&>"`: "a string",
	} {
		if got := mcpe.DescribeJSON([]byte(in)); got != want {
			t.Errorf("DescribeJSON(%q) = %q, want %q", in, got, want)
		}
	}
}
