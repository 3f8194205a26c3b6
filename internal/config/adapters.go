package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// mcpLogLevels are the MCP logging levels, least severe first.
var mcpLogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

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
		if _, err := g.Secret.Value("adapters.github.secret"); err != nil {
			return err
		}
		if g.MaxBodyBytes < 0 {
			return errors.New("adapters.github.maxBodyBytes must be positive (or left out for 1048576)")
		}
		if err := checkPriorities("adapters.github.priorityLabels", g.PriorityLabels); err != nil {
			return err
		}
	}
	if s := a.Slack; s != nil {
		if _, err := s.SigningSecret.Value("adapters.slack.signingSecret"); err != nil {
			return err
		}
		if s.MaxBodyBytes < 0 {
			return errors.New("adapters.slack.maxBodyBytes must be positive (or left out for 1048576)")
		}
	}
	if m := a.Alertmanager; m != nil {
		for i, t := range m.Tokens {
			if _, err := t.Value(fmt.Sprintf("adapters.alertmanager.tokens[%d]", i)); err != nil {
				return err
			}
		}
		if err := checkPriorities("adapters.alertmanager.severityPriorities", m.SeverityPriorities); err != nil {
			return err
		}
		if m.MaxBodyBytes < 0 {
			return errors.New("adapters.alertmanager.maxBodyBytes must be positive (or left out for 1048576)")
		}
	}
	if m := a.MCP; m != nil {
		if m.LogLevel != "" && !slices.Contains(mcpLogLevels, m.LogLevel) {
			return fmt.Errorf("adapters.mcp.logLevel %q is not an MCP logging level; use one of %s", m.LogLevel, strings.Join(mcpLogLevels, ", "))
		}
		if m.MinBackoff < 0 || m.MaxBackoff < 0 || (m.MaxBackoff > 0 && m.MaxBackoff < m.MinBackoff) {
			return fmt.Errorf("adapters.mcp: minBackoff (%v) and maxBackoff (%v) must be positive with maxBackoff at least minBackoff; leave them out for 1s and 5m", time.Duration(m.MinBackoff), time.Duration(m.MaxBackoff))
		}
		seen := map[string]bool{}
		for i, u := range m.Upstreams {
			field := fmt.Sprintf("adapters.mcp.upstreams[%d]", i)
			if !commandName.MatchString(u.Name) || strings.Contains(u.Name, ".") {
				return fmt.Errorf("%s.name %q: give a name of letters, digits, '_' or '-' (it becomes the event type segment mcp.<name>)", field, u.Name)
			}
			if seen[u.Name] {
				return fmt.Errorf("%s.name %q is used twice; each upstream needs its own name", field, u.Name)
			}
			seen[u.Name] = true
			switch {
			case len(u.Command) > 0 && u.URL != "":
				return fmt.Errorf("%s: give command (stdio) or url (Streamable HTTP), not both", field)
			case len(u.Command) == 0 && u.URL == "":
				return fmt.Errorf("%s: give command, e.g. [\"npx\", \"-y\", \"@modelcontextprotocol/server-everything\"], or url", field)
			case u.URL != "":
				p, err := url.Parse(u.URL)
				if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
					return fmt.Errorf("%s.url %q: give an http or https URL, e.g. \"https://mcp.example.com/mcp\"", field, u.URL)
				}
				if len(u.Env) > 0 {
					return fmt.Errorf("%s.env: env is for a command upstream; give a url upstream its settings with headers", field)
				}
			default:
				if strings.TrimSpace(u.Command[0]) == "" {
					return fmt.Errorf("%s.command: the program (first element) is empty", field)
				}
				if len(u.Headers) > 0 {
					return fmt.Errorf("%s.headers: headers are for a url upstream; give a command its settings with env", field)
				}
			}
			if v := u.ProtocolVersion; v != "" && !slices.Contains(mcp.SupportedProtocolVersions(), v) {
				return fmt.Errorf("%s.protocolVersion %q: use one of %s, or leave it out to choose", field, v, strings.Join(mcp.SupportedProtocolVersions(), ", "))
			}
		}
	}
	return nil
}

// checkPriorities checks that every value of m is a priority.
func checkPriorities(field string, m map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !mcpe.Priority(strings.ToLower(m[k])).Valid() {
			return fmt.Errorf("%s.%s: %q is not a priority; use low, normal, high or critical", field, k, m[k])
		}
	}
	return nil
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
