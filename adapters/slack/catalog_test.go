package slack

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// entryFor returns the catalog type an event type belongs to: itself,
// slack.message.<subtype> or slack.<event_type>.
func entryFor(cat []mcpe.EventType, typ string) mcpe.EventType {
	find := func(name string) (mcpe.EventType, bool) {
		i := slices.IndexFunc(cat, func(et mcpe.EventType) bool { return et.Type == name })
		if i < 0 {
			return mcpe.EventType{}, false
		}
		return cat[i], true
	}
	if et, ok := find(typ); ok {
		return et
	}
	if strings.HasPrefix(typ, "slack.message.") {
		et, _ := find("slack.message.<subtype>")
		return et
	}
	et, _ := find("slack.<event_type>")
	return et
}

func TestCatalog(t *testing.T) {
	a, _, _ := newTestAdapter(t, nil)
	cat := a.Catalog()
	if len(cat) != len(entries) {
		t.Fatalf("%d catalog types, want %d", len(cat), len(entries))
	}
	for _, et := range cat {
		t.Run(et.Type, func(t *testing.T) {
			concrete := strings.NewReplacer("<subtype>", "channel_join", "<event_type>", "team_join").Replace(et.Type)
			if err := mcpe.ValidateType(concrete); err != nil {
				t.Error(err)
			}
			if et.Description == "" || strings.Contains(et.Description, "\n") || et.Priority == "" || et.Tags == "" {
				t.Errorf("description (one line), priority or tags missing: %+v", et)
			}
			if err := adaptertest.Validate(t, et.DataSchema, et.Example); err != nil {
				t.Errorf("the example does not validate against the schema: %v\nexample: %s", err, et.Example)
			}
			if got := entryFor(cat, concrete).Type; got != et.Type {
				t.Errorf("%s is listed under %s", concrete, got)
			}
			var example Data
			if err := json.Unmarshal(et.Example, &example); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(et.Type, "<") && eventType(example.Type, example.Subtype) != et.Type {
				t.Errorf("the example is of type %s", eventType(example.Type, example.Subtype))
			}
			// Schemas are strict: a field the adapter does not write is
			// refused.
			var withExtra map[string]any
			json.Unmarshal(et.Example, &withExtra)
			withExtra["color"] = "red"
			extra, _ := json.Marshal(withExtra)
			if adaptertest.Validate(t, et.DataSchema, extra) == nil {
				t.Error("the schema accepts a field Data does not have")
			}
		})
	}
	// Callers get a copy.
	cat[0].Type = "changed"
	if a.Catalog()[0].Type == "changed" {
		t.Error("Catalog returns the adapter's own slice")
	}
}

// Every event made from a fixture validates against the schema of its
// catalog type, so the schemas describe what Slack's real payloads become.
func TestGoldenEventsMatchCatalog(t *testing.T) {
	a, _, _ := newTestAdapter(t, nil)
	cat := a.Catalog()
	used := map[string]bool{}
	for _, name := range adaptertest.Fixtures(t) {
		raw := adaptertest.ReadFixture(t, name+".golden.json")
		var g golden
		if err := json.Unmarshal(raw, &g); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, ev := range g.Events {
			et := entryFor(cat, ev.Type)
			used[et.Type] = true
			if err := adaptertest.Validate(t, et.DataSchema, ev.Data); err != nil {
				t.Errorf("%s: the data of %s does not validate against the schema of %s: %v", name, ev.Type, et.Type, err)
			}
		}
	}
	// Every catalog type has a fixture.
	for _, et := range cat {
		if !used[et.Type] {
			t.Errorf("no fixture in testdata gives an event of %s", et.Type)
		}
	}
}

// The types with an entry of their own are exactly the mapped ones; the
// others are slack.<event_type> and carry data.event.
func TestCatalogMatchesMapping(t *testing.T) {
	var own []string
	for _, e := range entries {
		if e.generic {
			if e.slackType != "" {
				t.Errorf("the generic entry %s names type %q", e.typ, e.slackType)
			}
			continue
		}
		if !mapped(e.slackType) {
			t.Errorf("%s has a catalog entry but no mapping", e.slackType)
		}
		if !slices.Contains(own, e.slackType) {
			own = append(own, e.slackType)
		}
	}
	for _, typ := range []string{"message", "app_mention", "reaction_added", "reaction_removed", "member_joined_channel", "member_left_channel",
		"channel_created", "channel_rename", "channel_archive", "channel_unarchive", "channel_deleted", "pin_added", "pin_removed", "file_shared"} {
		if !slices.Contains(own, typ) {
			t.Errorf("mapped type %s has no catalog entry", typ)
		}
	}
	for _, typ := range []string{"team_join", "app_home_opened", "emoji_changed", "link_shared", ""} {
		if mapped(typ) {
			t.Errorf("%q is mapped", typ)
		}
	}
}
