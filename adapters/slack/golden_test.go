package slack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// golden is what posting a fixture did: the answer and the events
// published.
type golden struct {
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	// Response is the answer when it is JSON; Text when it is not.
	Response json.RawMessage `json:"response,omitempty"`
	Text     string          `json:"text,omitempty"`
	NoRetry  bool            `json:"noRetry,omitempty"`
	Events   []mcpe.Event    `json:"events"`
}

// TestGolden posts every request in testdata/*.json, signed, and compares
// the answer and the events with testdata/<name>.golden.json. Run with
// -update to rewrite those.
func TestGolden(t *testing.T) {
	names := adaptertest.Fixtures(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			a, pub, _ := newTestAdapter(t, nil)
			w := post(a, adaptertest.ReadFixture(t, name+".json"))
			got := golden{
				Status:      w.Code,
				ContentType: w.Header().Get("Content-Type"),
				NoRetry:     w.Header().Get(HeaderNoRetry) == "1",
				Events:      pub.Published(),
			}
			if strings.HasPrefix(got.ContentType, "application/json") {
				got.Response = json.RawMessage(w.Body.Bytes())
			} else {
				got.Text = w.Body.String()
			}
			if got.Events == nil {
				got.Events = []mcpe.Event{}
			}
			adaptertest.Golden(t, name, got)
		})
	}
	if len(names) < 25 {
		t.Fatalf("found %d fixtures in testdata; want at least 25", len(names))
	}
}
