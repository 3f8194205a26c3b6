package config

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocsConfiguration parses every yaml block of docs/configuration.md,
// the configuration reference: every key it shows exists and its values
// pass.
func TestDocsConfiguration(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 6 {
		t.Fatalf("docs/configuration.md has %d yaml blocks; want the core keys, the handlers (4), the adapters and conversation", len(blocks))
	}
	for _, env := range []string{"CI_AGENT_TOKEN", "MCPE_INGEST_TOKEN", "MCPE_METRICS_TOKEN", "MCPE_CONSOLE_ADMIN_TOKEN",
		"WEBHOOK_TOKEN", "OPENAI_API_KEY", "GITHUB_WEBHOOK_SECRET", "SLACK_SIGNING_SECRET", "MCPE_ALERTMANAGER_TOKEN"} {
		t.Setenv(env, "secret-of-"+env)
	}
	var metrics bool
	for _, b := range blocks {
		cfg, err := Parse(strings.NewReader(b[1]))
		if err != nil {
			t.Errorf("a yaml block of docs/configuration.md: %v\n%s", err, b[1])
			continue
		}
		if cfg.Metrics.Enabled && len(cfg.Metrics.Tokens) == 1 {
			metrics = true
		}
	}
	if !metrics {
		t.Error("no yaml block of docs/configuration.md turns metrics on with a token")
	}
}
