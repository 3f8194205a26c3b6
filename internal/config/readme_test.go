package config

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeConfiguration parses the configuration example of the README's
// Configuration section: every key it shows exists and its values pass.
func TestReadmeConfiguration(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Configuration\n")
	if !ok {
		t.Fatal("the README has no Configuration section")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatal("the Configuration section has no yaml block")
	}
	block, _, _ = strings.Cut(block, "```")
	for _, env := range []string{"CI_AGENT_TOKEN", "MCPE_INGEST_TOKEN", "MCPE_METRICS_TOKEN", "MCPE_CONSOLE_ADMIN_TOKEN"} {
		t.Setenv(env, "secret-of-"+env)
	}
	cfg, err := Parse(strings.NewReader(block))
	if err != nil {
		t.Fatalf("the README's configuration example: %v", err)
	}
	if !cfg.Metrics.Enabled || len(cfg.Metrics.Tokens) != 1 {
		t.Errorf("metrics from the README's example = %+v; want enabled with a token", cfg.Metrics)
	}
}
