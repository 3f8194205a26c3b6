package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/adapters/github"
	mcpadapter "github.com/mcpe-server/mcpe-server/adapters/mcp"
	"github.com/mcpe-server/mcpe-server/adapters/slack"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

func TestParseAdapters(t *testing.T) {
	t.Setenv("MCPE_TEST_GH_SECRET", "gh")
	t.Setenv("MCPE_TEST_DOCS_TOKEN", "docs-token")
	c, err := Parse(strings.NewReader(`
adapters:
  github:
    tokenEnv: MCPE_TEST_GH_SECRET
    priorityLabels: {P0: Critical, bug: high}
  slack:
    signingSecret: {token: s}
  alertmanager:
    tokens: [{token: am}]
    severityPriorities: {page: critical}
  mcp:
    upstreams:
      - name: everything
        command: [npx, -y, "@modelcontextprotocol/server-everything"]
      - name: docs
        url: https://docs.example.com/mcp
        headers: {Authorization: "Bearer ${MCPE_TEST_DOCS_TOKEN}"}
`))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Adapters
	if p := Priorities(a.GitHub.PriorityLabels); p["P0"] != mcpe.PriorityCritical || p["bug"] != mcpe.PriorityHigh {
		t.Errorf("github priorities %v", p)
	}
	if h := Expanded(a.MCP.Upstreams[1].Headers); h["Authorization"] != "Bearer docs-token" {
		t.Errorf("headers %v", h)
	}
	if len(a.MCP.Upstreams[0].Command) != 3 || a.Slack == nil || len(a.Alertmanager.Tokens) != 1 {
		t.Errorf("adapters %+v", a)
	}
}

func TestPriorities(t *testing.T) {
	if p := Priorities(nil); p != nil {
		t.Errorf("Priorities(nil) = %v; want nil (the adapter's built-in rule)", p)
	}
	if p := Priorities(map[string]string{}); p == nil || len(p) != 0 {
		t.Errorf("Priorities({}) = %#v; want an empty map (no rule)", p)
	}
	c, err := Parse(strings.NewReader("adapters:\n  github:\n    token: x\n    priorityLabels: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := Priorities(c.Adapters.GitHub.PriorityLabels); p == nil {
		t.Error("priorityLabels: {} gave nil; want an empty map that replaces the built-in rule")
	}
}

func TestParseAdapterErrors(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"adapters:\n  github: {}\n", "adapters.github: give token"},
		{"adapters:\n  github:\n    token: x\n    priorityLabels: {P0: urgent}\n", `adapters.github.priorityLabels.P0: "urgent" is not a priority`},
		{"adapters:\n  slack:\n    signingSecret: {tokenEnv: MCPE_TEST_UNSET_VARIABLE}\n", "adapters.slack.signingSecret.tokenEnv: environment variable MCPE_TEST_UNSET_VARIABLE is not set"},
		{"adapters:\n  alertmanager:\n    tokens: [{}]\n", "adapters.alertmanager.tokens[0]: give token"},
		{"adapters:\n  mcp:\n    upstreams: [{name: a.b, url: 'https://x'}]\n", `adapters.mcp.upstreams[0].name: "a.b" is not a name of letters, digits`},
		{"adapters:\n  mcp:\n    upstreams: [{name: a, url: 'https://x'}, {name: a, url: 'https://y'}]\n", `adapters.mcp.upstreams[1].name: "a" is used twice`},
		{"adapters:\n  mcp:\n    upstreams: [{name: a}]\n", "adapters.mcp.upstreams[0]: give command"},
		{"adapters:\n  mcp:\n    upstreams: [{name: a, command: [x], url: 'https://x'}]\n", "not both"},
		{"adapters:\n  mcp:\n    upstreams: [{name: a, url: 'ftp://x'}]\n", `adapters.mcp.upstreams[0].url: "ftp://x" is not an http or https URL`},
		{"adapters:\n  mcp:\n    upstreams: [{name: a, url: 'https://x', env: {A: b}}]\n", "adapters.mcp.upstreams[0].env: env is for a command upstream"},
		{"adapters:\n  mcp:\n    upstreams: [{name: a, command: [x], headers: {A: b}}]\n", "adapters.mcp.upstreams[0].headers: headers are for a url upstream"},
		{"adapters:\n  mcp:\n    upstreams: [{name: a, command: [' ', x]}]\n", "adapters.mcp.upstreams[0].command: the program (first element) is empty"},
	} {
		_, err := Parse(strings.NewReader(tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v; want an error containing %q", tt.yaml, err, tt.want)
		}
	}
}

// TestAdapterOptions checks what each adapter section turns into.
func TestAdapterOptions(t *testing.T) {
	t.Setenv("MCPE_TEST_DOCS_TOKEN", "docs-token")
	c, err := Parse(strings.NewReader(`
adapters:
  github:
    token: gh
    priorityLabels: {P0: Critical}
  slack:
    signingSecret: {token: s}
  alertmanager:
    tokens: [{token: a}, {token: b}]
    severityPriorities: {page: critical}
  mcp:
    upstreams:
      - name: docs
        url: https://docs.example.com/mcp
        headers: {Authorization: "Bearer ${MCPE_TEST_DOCS_TOKEN}"}
`))
	if err != nil {
		t.Fatal(err)
	}
	gh, err := c.Adapters.GitHub.Options()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(github.Options{Secret: []byte("gh"), PriorityLabels: map[string]mcpe.Priority{"P0": mcpe.PriorityCritical}}, gh); diff != "" {
		t.Errorf("github options mismatch (-want +got):\n%s", diff)
	}
	sl, err := c.Adapters.Slack.Options()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(slack.Options{SigningSecret: []byte("s")}, sl); diff != "" {
		t.Errorf("slack options mismatch (-want +got):\n%s", diff)
	}
	am, err := c.Adapters.Alertmanager.Options()
	if err != nil {
		t.Fatal(err)
	}
	if am.Tokens.Len() != 2 || am.SeverityPriorities["page"] != mcpe.PriorityCritical {
		t.Errorf("alertmanager options: %d tokens, priorities %v; want 2 tokens and page -> critical", am.Tokens.Len(), am.SeverityPriorities)
	}
	want := mcpadapter.Options{
		Upstreams: []mcpadapter.Upstream{{Name: "docs", URL: "https://docs.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer docs-token"}}},
	}
	if diff := cmp.Diff(want, c.Adapters.MCP.Options()); diff != "" {
		t.Errorf("mcp options mismatch (-want +got):\n%s", diff)
	}
}

func TestWithin(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{mcpe.Invalid("sandbox", "is wrong"), "handlers.bash.sandbox: is wrong"},
		{fmt.Errorf("bash: %w", mcpe.Invalid("commands.x.path", "is missing")), "handlers.bash.commands.x.path: is missing"},
		{mcpe.Invalid("", "is wrong"), "handlers.bash: is wrong"},
		{errors.New("bwrap is broken"), "handlers.bash: bwrap is broken"},
	} {
		got := ""
		if err := Within("handlers.bash", tt.err); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("Within(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
