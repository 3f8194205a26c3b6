package alertmanager

import (
	"encoding/json"
	"testing"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// golden is what posting a fixture did: the answer and the events
// published.
type golden struct {
	Status   int             `json:"status"`
	Response json.RawMessage `json:"response"`
	Events   []mcpe.Event    `json:"events"`
}

// TestGolden posts every notification in testdata/*.json and compares the
// answer and the events with testdata/<name>.golden.json. Run with -update
// to rewrite those.
func TestGolden(t *testing.T) {
	names := adaptertest.Fixtures(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			a, pub := newTestAdapter(t, nil)
			w := post(a, adaptertest.ReadFixture(t, name+".json"))
			got := golden{Status: w.Code, Response: json.RawMessage(w.Body.Bytes()), Events: pub.Published()}
			if got.Events == nil {
				got.Events = []mcpe.Event{}
			}
			adaptertest.Golden(t, name, got)
		})
	}
	if len(names) < 8 {
		t.Fatalf("found %d fixtures in testdata; want at least 8", len(names))
	}
}
