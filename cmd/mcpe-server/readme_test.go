package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReadmeDigestExamples runs the README's events_subscribe examples for
// digests as a reader would: the scheduled one with DELIVER_AT two hours
// from now, as the README says to compute it.
func TestReadmeDigestExamples(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skipf("no time zone data: %v", err)
	}
	deliverAt := time.Now().In(paris).Add(2 * time.Hour).Format("2006-01-02T15:04:05")
	c, _ := startStdio(t, filepath.Join(t.TempDir(), "mcpe.db"), nil)
	ran := 0
	for _, b := range blocks {
		text := b[1]
		if !strings.Contains(text, `"delivery"`) || !strings.Contains(text, `"filter"`) {
			continue
		}
		text = strings.ReplaceAll(text, "DELIVER_AT", deliverAt)
		var args map[string]any
		if err := json.Unmarshal([]byte(text), &args); err != nil {
			t.Fatalf("a README example is not JSON: %v\n%s", err, text)
		}
		if _, errText := c.Call(t, "events_subscribe", args); errText != "" {
			t.Errorf("the README example\n%s\nis refused: %s", text, errText)
		}
		ran++
	}
	if ran < 2 {
		t.Fatalf("found %d digest examples in the README; want the cron and the scheduled one", ran)
	}
}
