package mcpe

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Throttle sends at most one realtime notification per window for each
// group of a subscription's events: a group's first event is delivered at
// once and opens its window; later ones are folded, and the window's end
// sends the latest with folded (how many) and opens the next window, or,
// with nothing folded, closes the group.
type Throttle struct {
	// Window is a duration from 1s to 24h, such as "10m".
	Window string `json:"window"`
	// GroupBy is "type", "priority", "tag:" and a prefix (the event's first
	// tag with it) or "data." and a path of fields; empty makes one group.
	GroupBy string `json:"groupBy,omitempty"`
}

// A subscription has at most MaxThrottleGroups open groups: the events of
// any other group share the window of OverflowGroup.
const (
	MaxThrottleGroups = 1000
	OverflowGroup     = "(other groups)"
)

// Length is the window; zero when it is not from 1s to 24h.
func (t *Throttle) Length() time.Duration {
	if d, err := time.ParseDuration(t.Window); err == nil && d >= time.Second && d <= 24*time.Hour {
		return d
	}
	return 0
}

func (t *Throttle) validate() error {
	if t.Length() == 0 {
		return Invalid("delivery.throttle.window", `%q is not a duration from 1s to 24h; use e.g. "30s", "10m" or "2h"`, t.Window)
	}
	path, data := strings.CutPrefix(t.GroupBy, "data.")
	if by := t.GroupBy; len(by) > 256 || !(by == "" || by == "type" || by == "priority" || len(by) > 4 && by[:4] == "tag:" ||
		data && !strings.Contains("."+path+".", "..")) {
		return Invalid("delivery.throttle.groupBy", `%q is not a grouping; use "type", "priority", "tag:" and a tag prefix (such as "tag:repo:"), `+
			`"data." and a path of fields (such as "data.repository.full_name"), or leave it out for one group`, by)
	}
	return nil
}

// Group returns the group of ev: its type, priority, first tag with the
// prefix, or the value at the data path (a string as it is, anything else
// as JSON); "" when it has none. One longer than 128 bytes is its SHA-256.
func (t *Throttle) Group(ev *Event) (g string) {
	switch by := t.GroupBy; {
	case by == "type":
		g = ev.Type
	case by == "priority":
		g = string(ev.Metadata.Priority)
	case strings.HasPrefix(by, "tag:"):
		for _, tag := range ev.Metadata.Tags {
			if strings.HasPrefix(tag, by[4:]) {
				g = tag
				break
			}
		}
	case strings.HasPrefix(by, "data."):
		v := json.RawMessage(ev.Data)
		for _, k := range strings.Split(by[5:], ".") {
			var m map[string]json.RawMessage
			json.Unmarshal(v, &m) // not an object: the field is missing
			v = m[k]
		}
		if json.Unmarshal(v, &g) != nil && v != nil && string(v) != "null" {
			g = string(v)
		}
	}
	if len(g) > 128 {
		g = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(g)))
	}
	return g
}
