package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// readDoc reads a file of the repository, relative to its root.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsDigestExamples runs the events_subscribe examples for digests of
// docs/delivery.md as a reader would: the scheduled one with DELIVER_AT two
// hours from now, as the page says to compute it.
func TestDocsDigestExamples(t *testing.T) {
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(readDoc(t, "docs/delivery.md"), -1)
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
			t.Fatalf("an example of docs/delivery.md is not JSON: %v\n%s", err, text)
		}
		if _, errText := c.Call(t, "events_subscribe", args); errText != "" {
			t.Errorf("the example of docs/delivery.md\n%s\nis refused: %s", text, errText)
		}
		ran++
	}
	if ran < 2 {
		t.Fatalf("found %d digest examples in docs/delivery.md; want the cron and the scheduled one", ran)
	}
}

// TestReadmeCommands checks the README's two commands: the test command is
// the one .ci/run runs, and the serve command's flags parse.
func TestReadmeCommands(t *testing.T) {
	readme := readDoc(t, "README.md")
	for _, cmd := range []string{"go run ./cmd/mcpe-server --http 127.0.0.1:8765", "go test ./..."} {
		if !strings.Contains(readme, "\n"+cmd+" ") {
			t.Errorf("the README does not give the command %q at the start of a line", cmd)
		}
	}
	if !regexp.MustCompile(`(?m)^go test \./\.\.\.$`).MatchString(readDoc(t, ".ci/run")) {
		t.Error(".ci/run does not run the README's test command `go test ./...` on a line of its own")
	}
	flags, err := parseServeFlags([]string{"--http", "127.0.0.1:8765"}, io.Discard)
	if err != nil || flags.http != "127.0.0.1:8765" {
		t.Errorf("the README's serve command: flags %+v, %v", flags, err)
	}
}

// TestReadmeStarterConfig checks the Quick start's configuration as a reader
// would: with the environment it exports, `mcpe-server check` says ok, and
// the configuration has what the README says it has.
func TestReadmeStarterConfig(t *testing.T) {
	_, quick, ok := strings.Cut(readDoc(t, "README.md"), "\n## Quick start\n")
	if !ok {
		t.Fatal("the README has no Quick start section")
	}
	_, block, ok := strings.Cut(quick, "```yaml\n")
	if !ok {
		t.Fatal("the Quick start has no yaml block")
	}
	block, _, _ = strings.Cut(block, "```")
	exports := regexp.MustCompile(`([A-Z_]+)=\$\(openssl rand -hex 24\)`).FindAllStringSubmatch(quick, -1)
	if len(exports) == 0 {
		t.Fatal("the Quick start exports no tokens")
	}
	for _, e := range exports {
		t.Setenv(e[1], "a-token-of-the-quick-start-"+e[1])
	}
	for _, want := range []string{"auth:\n  tokens:", "console:\n  tokenEnv:", "adapters:\n  github:"} {
		if !strings.Contains(block, want) {
			t.Errorf("the Quick start's configuration lacks %q", want)
		}
	}
	cfg := writeConfig(t, block)
	code, out, stderr := cli(t, "check", "--config", cfg, "--db", filepath.Join(t.TempDir(), "mcpe.db"))
	if code != 0 || !strings.Contains(out, ": ok") {
		t.Errorf("check of the Quick start's configuration = %d, %q, %q; want ok\n%s", code, out, stderr, block)
	}
}

// TestDocsHandlerFields checks the field tables of docs/handlers.md against
// the handler shapes events_subscribe offers when every handler type is on:
// each field a shape takes is in its table, and each field of a table but
// those marked "answer only" is one the shape takes.
func TestDocsHandlerFields(t *testing.T) {
	script := filepath.Join(t.TempDir(), "notify.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "handlers:\n  agent:\n    enabled: true\n  webhook:\n    enabled: true\n  bash:\n    commands:\n      notify: {path: "+script+"}\n")
	c, _ := startStdio(t, filepath.Join(t.TempDir(), "mcpe.db"), nil, "--config", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemaFields := map[string][]string{}
	for _, tool := range res.Tools {
		if tool.Name != "events_subscribe" {
			continue
		}
		raw, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties map[string]struct {
				OneOf []struct {
					Title      string                     `json:"title"`
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"oneOf"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatal(err)
		}
		for _, s := range schema.Properties["handler"].OneOf {
			for f := range s.Properties {
				schemaFields[s.Title] = append(schemaFields[s.Title], f)
			}
			slices.Sort(schemaFields[s.Title])
		}
	}
	if len(schemaFields) != 3 {
		t.Fatalf("events_subscribe offers the handler shapes %v; want bash, webhook and agent", schemaFields)
	}
	page := readDoc(t, "docs/handlers.md")
	row := regexp.MustCompile("^\\| `([A-Za-z]+)` \\| ([^|]+) \\|")
	for typ, want := range schemaFields {
		_, table, ok := strings.Cut(page, "\n### The "+typ+" handler's fields\n")
		if !ok {
			t.Errorf("docs/handlers.md has no section \"The %s handler's fields\"", typ)
			continue
		}
		var got []string
		for _, line := range strings.Split(table, "\n") {
			if strings.HasPrefix(line, "#") {
				break
			}
			if m := row.FindStringSubmatch(line); m != nil && strings.TrimSpace(m[2]) != "answer only" {
				got = append(got, m[1])
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("docs/handlers.md lists the %s handler's fields %v; its schema takes %v", typ, got, want)
		}
	}
}
