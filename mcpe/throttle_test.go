package mcpe_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

func TestThrottleGroup(t *testing.T) {
	long := strings.Repeat("x", 200)
	ev := &mcpe.Event{Type: "ci.failed", Data: json.RawMessage(`{"repository": {"full_name": "acme/api", "id": 12345678901234567890, "topics": ["a"]}, "long": "` + long + `"}`),
		Metadata: mcpe.Metadata{Priority: mcpe.PriorityHigh, Tags: []string{"ci", "repo:acme/api", "repo:other"}}}
	for by, want := range map[string]string{
		"":                          "",
		"type":                      "ci.failed",
		"priority":                  "high",
		"tag:repo:":                 "repo:acme/api",
		"tag:team:":                 "",
		"data.repository.full_name": "acme/api",
		"data.repository.id":        "12345678901234567890",
		"data.repository.topics":    `["a"]`,
		"data.repository.missing":   "",
		"data.long.deeper":          "",
		"data.long":                 "sha256:",
	} {
		got := (&mcpe.Throttle{Window: "1m", GroupBy: by}).Group(ev)
		if got != want && !(want == "sha256:" && strings.HasPrefix(got, want) && len(got) == 71) {
			t.Errorf("Group by %q = %q; want %q", by, got, want)
		}
	}
}

func TestThrottleValidate(t *testing.T) {
	realtime := []mcpe.Channel{mcpe.ChannelRealtime}
	for _, th := range []mcpe.Throttle{{Window: "1s"}, {Window: "24h", GroupBy: "type"}, {Window: "90s", GroupBy: "tag:repo:"}, {Window: "1h30m", GroupBy: "data.a.b"}} {
		if err := (mcpe.Delivery{Channels: realtime, Throttle: &th}).Validate(realtime); err != nil {
			t.Errorf("%+v: %v; want it accepted", th, err)
		}
	}
}
