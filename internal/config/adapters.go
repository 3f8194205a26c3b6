package config

import (
	"errors"
	"os"
	"strings"

	"github.com/mcpe-server/mcpe-server/adapters/alertmanager"
	"github.com/mcpe-server/mcpe-server/adapters/github"
	mcpadapter "github.com/mcpe-server/mcpe-server/adapters/mcp"
	"github.com/mcpe-server/mcpe-server/adapters/slack"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Adapters configures the event sources besides POST /v1/events. Each is
// off until configured here.
type Adapters struct {
	// GitHub receives repository webhooks on POST /adapters/github.
	GitHub *GitHubAdapter `yaml:"github"`
	// Slack receives the Events API on POST /adapters/slack.
	Slack *SlackAdapter `yaml:"slack"`
	// Alertmanager receives Prometheus Alertmanager webhooks on POST
	// /adapters/alertmanager.
	Alertmanager *AlertmanagerAdapter `yaml:"alertmanager"`
	// MCP connects to upstream MCP servers.
	MCP *MCPAdapter `yaml:"mcp"`
}

// GitHubAdapter configures the GitHub webhook receiver.
type GitHubAdapter struct {
	// Secret (token or tokenEnv) is the webhook's secret; required.
	Secret `yaml:",inline"`
	// PriorityLabels map issue and pull request labels to priorities,
	// replacing the built-in rule.
	PriorityLabels map[string]string `yaml:"priorityLabels"`
}

// SlackAdapter configures the Slack Events API receiver.
type SlackAdapter struct {
	// SigningSecret is the app's signing secret; required.
	SigningSecret Secret `yaml:"signingSecret"`
}

// AlertmanagerAdapter configures the Alertmanager webhook receiver.
type AlertmanagerAdapter struct {
	// Tokens, when given, are required as bearer tokens.
	Tokens []Secret `yaml:"tokens"`
	// SeverityPriorities map the severity label to priorities, replacing
	// the built-in rule (critical, warning -> high, info -> low).
	SeverityPriorities map[string]string `yaml:"severityPriorities"`
}

// MCPAdapter configures the upstream MCP servers.
type MCPAdapter struct {
	Upstreams []MCPUpstream `yaml:"upstreams"`
}

// MCPUpstream is one upstream MCP server: a command (stdio) or a URL
// (Streamable HTTP). ${NAME} in env and header values is read from the
// server's environment.
type MCPUpstream struct {
	// Name is the upstream's segment in event types: mcp.<name>.*.
	Name    string            `yaml:"name"`
	Command []string          `yaml:"command"`
	Env     map[string]string `yaml:"env"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
}

func (a *Adapters) validate() error {
	return errors.Join(
		checkSection("adapters.github", a.GitHub, (*GitHubAdapter).Options),
		checkSection("adapters.slack", a.Slack, (*SlackAdapter).Options),
		checkSection("adapters.alertmanager", a.Alertmanager, (*AlertmanagerAdapter).Options),
		checkSection("adapters.mcp", a.MCP, func(m *MCPAdapter) (mcpadapter.Options, error) { return m.Options(), nil }),
	)
}

// checkSection returns the error of build, which turns s, the section at
// path, into options, or else of the options' Validate, under path
// (Within). A nil s, a section left out, has none.
func checkSection[S, T any, P interface {
	*T
	Validate() error
}](path string, s *S, build func(*S) (T, error)) error {
	if s == nil {
		return nil
	}
	opts, err := build(s)
	if err == nil {
		err = P(&opts).Validate()
	}
	return Within(path, err)
}

// Options returns the GitHub receiver's options as configured, with the
// secret read; the caller adds the Publisher, Clock and Logger. An error
// names the key under adapters.github.
func (g *GitHubAdapter) Options() (github.Options, error) {
	secret, err := g.Value("")
	if err != nil {
		return github.Options{}, err
	}
	return github.Options{Secret: []byte(secret), PriorityLabels: Priorities(g.PriorityLabels)}, nil
}

// Options returns the Slack receiver's options as configured, with the
// signing secret read; the caller adds the Publisher, Clock and Logger. An
// error names the key under adapters.slack.
func (s *SlackAdapter) Options() (slack.Options, error) {
	secret, err := s.SigningSecret.Value("signingSecret")
	if err != nil {
		return slack.Options{}, err
	}
	return slack.Options{SigningSecret: []byte(secret)}, nil
}

// Options returns the Alertmanager receiver's options as configured, with
// the tokens read; the caller adds the Publisher, Clock and Logger. An
// error names the key under adapters.alertmanager.
func (m *AlertmanagerAdapter) Options() (alertmanager.Options, error) {
	byToken, err := tokens("tokens", m.Tokens, func(s Secret) (Secret, string) { return s, "alertmanager" })
	if err != nil {
		return alertmanager.Options{}, err
	}
	return alertmanager.Options{
		Tokens:             httpapi.NewTokens(byToken),
		SeverityPriorities: Priorities(m.SeverityPriorities),
	}, nil
}

// Options returns the upstream MCP servers' options as configured, with
// ${NAME} in env and header values read from the environment; the caller
// adds the Publisher, Clock and Logger.
func (m *MCPAdapter) Options() mcpadapter.Options {
	ups := make([]mcpadapter.Upstream, 0, len(m.Upstreams))
	for _, u := range m.Upstreams {
		ups = append(ups, mcpadapter.Upstream{Name: u.Name, Command: u.Command, Env: Expanded(u.Env), URL: u.URL, Headers: Expanded(u.Headers)})
	}
	return mcpadapter.Options{Upstreams: ups}
}

// Priorities returns m with its values as priorities. A nil m gives nil (the
// adapter's built-in rule); an empty one gives an empty map (no rule: every
// event is normal).
func Priorities(m map[string]string) map[string]mcpe.Priority {
	return mapValues(m, func(v string) mcpe.Priority { return mcpe.Priority(strings.ToLower(v)) })
}

// Expanded returns m with ${NAME} in its values read from the environment.
func Expanded(m map[string]string) map[string]string {
	return mapValues(m, os.ExpandEnv)
}

// mapValues returns m with f applied to each value; a nil m gives nil.
func mapValues[V, W any](m map[string]V, f func(V) W) map[string]W {
	if m == nil {
		return nil
	}
	out := make(map[string]W, len(m))
	for k, v := range m {
		out[k] = f(v)
	}
	return out
}
