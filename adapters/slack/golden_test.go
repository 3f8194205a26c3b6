package slack

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the adapter's output")

// golden is what posting a fixture did: the answer and the events
// published.
type golden struct {
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	// Response is the answer when it is JSON; Text when it is not.
	Response json.RawMessage       `json:"response,omitempty"`
	Text     string                `json:"text,omitempty"`
	NoRetry  bool                  `json:"noRetry,omitempty"`
	Events   []subscriptions.Event `json:"events"`
}

// fixtures returns the names of the requests in testdata.
func fixtures(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		if !strings.HasSuffix(p, ".golden.json") {
			names = append(names, strings.TrimSuffix(filepath.Base(p), ".json"))
		}
	}
	return names
}

// TestGolden posts every request in testdata/*.json, signed, and compares
// the answer and the events with testdata/<name>.golden.json. Run with
// -update to rewrite those.
func TestGolden(t *testing.T) {
	names := fixtures(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			a, pub, _ := newTestAdapter(t, nil)
			w := post(a, readFixture(t, name+".json"))
			got := golden{
				Status:      w.Code,
				ContentType: w.Header().Get("Content-Type"),
				NoRetry:     w.Header().Get(HeaderNoRetry) == "1",
				Events:      pub.published(),
			}
			if strings.HasPrefix(got.ContentType, "application/json") {
				got.Response = json.RawMessage(w.Body.Bytes())
			} else {
				got.Text = w.Body.String()
			}
			if got.Events == nil {
				got.Events = []subscriptions.Event{}
			}
			out := encodeGolden(t, got)
			goldenPath := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(goldenPath, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v; run go test -update to create it", err)
			}
			if diff := cmp.Diff(string(want), string(out)); diff != "" {
				t.Errorf("%s mismatch (-want +got); run go test -update if the change is intended:\n%s", goldenPath, diff)
			}
		})
	}
	if len(names) < 25 {
		t.Fatalf("found %d fixtures in testdata; want at least 25", len(names))
	}
}

func encodeGolden(t *testing.T, g golden) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(g); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
