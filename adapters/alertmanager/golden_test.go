package alertmanager

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
	Status   int                   `json:"status"`
	Response json.RawMessage       `json:"response"`
	Events   []subscriptions.Event `json:"events"`
}

// TestGolden posts every notification in testdata/*.json and compares the
// answer and the events with testdata/<name>.golden.json. Run with -update
// to rewrite those.
func TestGolden(t *testing.T) {
	fixtures, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range fixtures {
		if strings.HasSuffix(path, ".golden.json") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			a, pub := newTestAdapter(t, nil)
			w := post(a, readFixture(t, name+".json"))
			got := golden{Status: w.Code, Response: json.RawMessage(w.Body.Bytes()), Events: pub.published()}
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
	if n < 8 {
		t.Fatalf("found %d fixtures in testdata; want at least 8", n)
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
