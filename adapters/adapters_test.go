package adapters

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

func TestSegment(t *testing.T) {
	for in, want := range map[string]string{
		"issues":                    "issues",
		"pull_request":              "pull_request",
		"HighCPU Usage!":            "HighCPU_Usage",
		"  ":                        "unknown",
		"":                          "unknown",
		"a.b":                       "a_b",
		"überlast":                  "berlast",
		strings.Repeat("x", 100):    strings.Repeat("x", 64),
		"disk/sda1 -- 95% full ...": "disk_sda1_--_95_full",
		// A segment never starts with '-'.
		"-rf":      "rf",
		"--output": "output",
		"- -x":     "x",
		"--":       "unknown",
		"a-":       "a-",
	} {
		got := Segment(in)
		if got != want {
			t.Errorf("Segment(%q) = %q, want %q", in, got, want)
		}
		if err := mcpe.ValidateType("x." + got); err != nil {
			t.Errorf("Segment(%q) = %q is not a valid segment: %v", in, got, err)
		}
	}
}

func TestTags(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	got := Tags("repo:a/b", "", " repo:a/b ", "bad\x00tag", long)
	if len(got) != 3 || got[0] != "repo:a/b" || got[1] != "badtag" || len(got[2]) > mcpe.MaxTagLength {
		t.Fatalf("Tags = %q", got)
	}
	if diff := cmp.Diff(strings.Repeat("é", 64), got[2]); diff != "" {
		t.Errorf("long tag not cut on a rune boundary (-want +got):\n%s", diff)
	}
	many := make([]string, 50)
	for i := range many {
		many[i] = strings.Repeat("t", i+1)
	}
	if n := len(Tags(many...)); n != mcpe.MaxTags {
		t.Errorf("%d tags kept, want %d", n, mcpe.MaxTags)
	}
}

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a bit too long", 10, "a bit t…"},
		{"ééééé", 8, "éé…"},
		{"日本語テキスト", 9, "日本…"},
		{"日本語", 3, "…"},
		{"日本語", 4, "…"},
		// Too small for "…": cut without it.
		{"abcdef", 2, "ab"},
		{"éé", 2, "é"},
		{"日本", 2, ""},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"", 0, ""},
	} {
		got := Clip(tt.in, tt.max)
		if got != tt.want || len(got) > max(tt.max, 0) || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestTagTrimsWhatControlCharactersHid(t *testing.T) {
	for in, want := range map[string]string{
		"\x01\u00a0":  "",
		"\x01 a \x02": "a",
		"\ta\tb\n":    "ab",
	} {
		got := Tag(in)
		if got != want {
			t.Errorf("Tag(%q) = %q, want %q", in, got, want)
		}
		if got != "" {
			if err := subscriptions.NormalizeEvent(&mcpe.Event{Type: "x", Metadata: mcpe.Metadata{Tags: []string{got}}}, time.Now()); err != nil {
				t.Errorf("Tag(%q) = %q is not a valid tag: %v", in, got, err)
			}
		}
	}
}
