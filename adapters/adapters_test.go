package adapters

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
	} {
		got := Segment(in)
		if got != want {
			t.Errorf("Segment(%q) = %q, want %q", in, got, want)
		}
		if err := subscriptions.ValidateType("x." + got); err != nil {
			t.Errorf("Segment(%q) = %q is not a valid segment: %v", in, got, err)
		}
	}
}

func TestTags(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	got := Tags("repo:a/b", "", " repo:a/b ", "bad\x00tag", long)
	if len(got) != 3 || got[0] != "repo:a/b" || got[1] != "badtag" || len(got[2]) > subscriptions.MaxTagLength {
		t.Fatalf("Tags = %q", got)
	}
	if diff := cmp.Diff(strings.Repeat("é", 64), got[2]); diff != "" {
		t.Errorf("long tag not cut on a rune boundary (-want +got):\n%s", diff)
	}
	many := make([]string, 50)
	for i := range many {
		many[i] = strings.Repeat("t", i+1)
	}
	if n := len(Tags(many...)); n != subscriptions.MaxTags {
		t.Errorf("%d tags kept, want %d", n, subscriptions.MaxTags)
	}
}
