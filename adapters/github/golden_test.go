package github

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// golden is what posting a fixture did: the request's GitHub headers, the
// answer and the events published.
type golden struct {
	Event    string          `json:"event"`
	Delivery string          `json:"delivery"`
	Status   int             `json:"status"`
	Response json.RawMessage `json:"response"`
	Events   []mcpe.Event    `json:"events"`
}

// fixtureDelivery returns the delivery of a fixture: testdata/<event>.json
// or testdata/<event>.<variant>.json, with a delivery ID made from its
// name.
func fixtureDelivery(t testing.TB, name string) delivery {
	event, _, _ := strings.Cut(name, ".")
	return delivery{
		event: event,
		id:    uuid.NewSHA1(uuid.NameSpaceURL, []byte("fixture:"+name)).String(),
		body:  adaptertest.ReadFixture(t, name+".json"),
	}
}

// TestGolden posts every payload in testdata/*.json, signed, with the
// X-GitHub-Event its name starts with, and compares the answer and the
// events with testdata/<name>.golden.json; each event's data must also
// validate against its type's schema in the catalog. Run with -update to
// rewrite the golden files.
func TestGolden(t *testing.T) {
	names := adaptertest.Fixtures(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			a, pub := newTestAdapter(t, nil)
			d := fixtureDelivery(t, name)
			w := send(a, d)
			got := golden{Event: d.event, Delivery: d.id, Status: w.Code, Response: json.RawMessage(w.Body.Bytes()), Events: pub.Published()}
			if got.Events == nil {
				got.Events = []mcpe.Event{}
			}
			for _, ev := range got.Events {
				checkAgainstCatalog(t, a.Catalog(), ev)
			}
			adaptertest.Golden(t, name, got)
		})
	}
	// Every kind the adapter maps has a fixture, and so do ping and kinds
	// without a mapping.
	have := make(map[string]bool)
	for _, name := range names {
		event, _, _ := strings.Cut(name, ".")
		have[event] = true
	}
	for kind := range kinds {
		if !have[kind] {
			t.Errorf("no fixture testdata/%s.*.json for the mapped event kind %q", kind, kind)
		}
	}
	for _, event := range []string{"ping", "discussion", "gollum", "dependabot_alert"} {
		if !have[event] {
			t.Errorf("no fixture for %q", event)
		}
	}
}
