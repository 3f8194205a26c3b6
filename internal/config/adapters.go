package config

import (
	"fmt"
	"os"
	"strings"
	"time"

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
	// Secret is the webhook's secret; required.
	Secret Secret `yaml:"secret"`
	// MaxBodyBytes bounds a delivery. Default 1 MiB; GitHub sends up to
	// 25 MB.
	MaxBodyBytes int64 `yaml:"maxBodyBytes"`
	// PriorityLabels map issue and pull request labels to priorities,
	// replacing the built-in rule.
	PriorityLabels map[string]string `yaml:"priorityLabels"`
}

// SlackAdapter configures the Slack Events API receiver.
type SlackAdapter struct {
	// SigningSecret is the app's signing secret; required.
	SigningSecret Secret `yaml:"signingSecret"`
	// MaxBodyBytes bounds a request. Default 1 MiB.
	MaxBodyBytes int64 `yaml:"maxBodyBytes"`
}

// AlertmanagerAdapter configures the Alertmanager webhook receiver.
type AlertmanagerAdapter struct {
	// Tokens, when given, are required as bearer tokens.
	Tokens []Secret `yaml:"tokens"`
	// SeverityPriorities map the severity label to priorities, replacing
	// the built-in rule (critical, warning -> high, info -> low).
	SeverityPriorities map[string]string `yaml:"severityPriorities"`
	// MaxBodyBytes bounds a notification. Default 1 MiB.
	MaxBodyBytes int64 `yaml:"maxBodyBytes"`
}

// MCPAdapter configures the upstream MCP servers.
type MCPAdapter struct {
	Upstreams []MCPUpstream `yaml:"upstreams"`
	// LogLevel is the least severe log message asked of upstreams (an MCP
	// logging level). Default info.
	LogLevel string `yaml:"logLevel"`
	// MinBackoff is the first wait before reconnecting. Default 1s.
	MinBackoff Duration `yaml:"minBackoff"`
	// MaxBackoff caps the wait between reconnections. Default 5m.
	MaxBackoff Duration `yaml:"maxBackoff"`
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
	// ProtocolVersion is the MCP version to ask for; empty chooses (see
	// adapters/mcp).
	ProtocolVersion string `yaml:"protocolVersion"`
}

func (a *Adapters) validate() error {
	if g := a.GitHub; g != nil {
		opts, err := g.Options()
		if err == nil {
			err = opts.Validate()
		}
		if err != nil {
			return Within("adapters.github", err)
		}
	}
	if s := a.Slack; s != nil {
		opts, err := s.Options()
		if err == nil {
			err = opts.Validate()
		}
		if err != nil {
			return Within("adapters.slack", err)
		}
	}
	if m := a.Alertmanager; m != nil {
		opts, err := m.Options()
		if err == nil {
			err = opts.Validate()
		}
		if err != nil {
			return Within("adapters.alertmanager", err)
		}
	}
	if m := a.MCP; m != nil {
		opts := m.Options()
		if err := opts.Validate(); err != nil {
			return Within("adapters.mcp", err)
		}
	}
	return nil
}

// Options returns the GitHub receiver's options as configured, with the
// secret read; the caller adds the Publisher, Clock and Logger. An error
// names the key under adapters.github.
func (g *GitHubAdapter) Options() (github.Options, error) {
	secret, err := g.Secret.Value("secret")
	if err != nil {
		return github.Options{}, err
	}
	return github.Options{
		Secret:         []byte(secret),
		PriorityLabels: Priorities(g.PriorityLabels),
		MaxBodyBytes:   g.MaxBodyBytes,
	}, nil
}

// Options returns the Slack receiver's options as configured, with the
// signing secret read; the caller adds the Publisher, Clock and Logger. An
// error names the key under adapters.slack.
func (s *SlackAdapter) Options() (slack.Options, error) {
	secret, err := s.SigningSecret.Value("signingSecret")
	if err != nil {
		return slack.Options{}, err
	}
	return slack.Options{SigningSecret: []byte(secret), MaxBodyBytes: s.MaxBodyBytes}, nil
}

// Options returns the Alertmanager receiver's options as configured, with
// the tokens read; the caller adds the Publisher, Clock and Logger. An
// error names the key under adapters.alertmanager.
func (m *AlertmanagerAdapter) Options() (alertmanager.Options, error) {
	tokens := make(map[string]string, len(m.Tokens))
	for i, t := range m.Tokens {
		v, err := t.Value(fmt.Sprintf("tokens[%d]", i))
		if err != nil {
			return alertmanager.Options{}, err
		}
		tokens[v] = "alertmanager"
	}
	return alertmanager.Options{
		Tokens:             httpapi.NewTokens(tokens),
		SeverityPriorities: Priorities(m.SeverityPriorities),
		MaxBodyBytes:       m.MaxBodyBytes,
	}, nil
}

// Options returns the upstream MCP servers' options as configured, with
// ${NAME} in env and header values read from the environment; the caller
// adds the Publisher, Clock and Logger.
func (m *MCPAdapter) Options() mcpadapter.Options {
	ups := make([]mcpadapter.Upstream, 0, len(m.Upstreams))
	for _, u := range m.Upstreams {
		ups = append(ups, mcpadapter.Upstream{
			Name:            u.Name,
			Command:         u.Command,
			Env:             Expanded(u.Env),
			URL:             u.URL,
			Headers:         Expanded(u.Headers),
			ProtocolVersion: u.ProtocolVersion,
		})
	}
	return mcpadapter.Options{
		Upstreams:  ups,
		LogLevel:   m.LogLevel,
		MinBackoff: time.Duration(m.MinBackoff),
		MaxBackoff: time.Duration(m.MaxBackoff),
	}
}

// Priorities returns m with its values as priorities. A nil m gives nil (the
// adapter's built-in rule); an empty one gives an empty map (no rule: every
// event is normal).
func Priorities(m map[string]string) map[string]mcpe.Priority {
	if m == nil {
		return nil
	}
	out := make(map[string]mcpe.Priority, len(m))
	for k, v := range m {
		out[k] = mcpe.Priority(strings.ToLower(v))
	}
	return out
}

// Expanded returns m with ${NAME} in its values read from the environment.
func Expanded(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = os.ExpandEnv(v)
	}
	return out
}
