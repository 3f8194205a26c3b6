package config

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Handlers configures the handlers subscriptions may carry. Each type is off
// until configured here.
type Handlers struct {
	// Concurrency bounds the handler runs in progress. Default 32.
	Concurrency int `yaml:"concurrency"`
	// Bash runs allowed programs; on when it lists at least one command.
	Bash *BashHandler `yaml:"bash"`
	// Webhook POSTs deliveries; on with enabled: true.
	Webhook *WebhookHandler `yaml:"webhook"`
	// Agent asks an LLM; on with enabled: true.
	Agent *AgentHandler `yaml:"agent"`
}

// BashHandler configures the bash handler.
type BashHandler struct {
	// Commands are the programs a subscription may name, by name.
	Commands map[string]BashCommand `yaml:"commands"`
	// Sandbox is auto (bubblewrap when installed, the default), bwrap
	// (required) or off.
	Sandbox string `yaml:"sandbox"`
	// DefaultTimeout is a run's timeout when the subscription sets none.
	// Default 30s.
	DefaultTimeout Duration `yaml:"defaultTimeout"`
	// MaxTimeout is the longest timeout a subscription may set. Default 5m.
	MaxTimeout Duration `yaml:"maxTimeout"`
	// MaxConcurrent bounds the programs running at once. Default 4.
	MaxConcurrent int `yaml:"maxConcurrent"`
}

// BashCommand is one allowed program.
type BashCommand struct {
	// Path is the program's absolute path.
	Path string `yaml:"path"`
	// Env are variables the program gets besides the MCPE_* ones and PATH.
	Env map[string]string `yaml:"env"`
	// Network lets the program reach the network inside the sandbox.
	Network bool `yaml:"network"`
	// WritablePaths are paths it may write inside the sandbox.
	WritablePaths []string `yaml:"writablePaths"`
	// ReadOnlyRoot keeps the file system read-only inside the sandbox.
	// Default true.
	ReadOnlyRoot *bool `yaml:"readOnlyRoot"`
}

// WebhookHandler configures the webhook handler.
type WebhookHandler struct {
	// Enabled turns the webhook handler on.
	Enabled bool `yaml:"enabled"`
	// AllowHTTP allows http:// URLs besides https://.
	AllowHTTP bool `yaml:"allowHTTP"`
	// AllowNetworks are addresses or CIDR ranges a webhook may reach
	// although they are loopback, private or otherwise special.
	AllowNetworks []string `yaml:"allowNetworks"`
	// Secrets fill ${NAME} in a webhook's header values.
	Secrets map[string]Secret `yaml:"secrets"`
	// DefaultTimeout is a delivery's timeout when the subscription sets
	// none. Default 10s.
	DefaultTimeout Duration `yaml:"defaultTimeout"`
	// MaxTimeout is the longest timeout a subscription may set. Default
	// 60s.
	MaxTimeout Duration `yaml:"maxTimeout"`
	// RetrySchedule are the delays before each retry. Default 5s, 30s, 2m,
	// 10m, 30m.
	RetrySchedule []Duration `yaml:"retrySchedule"`
	// SecretGrace is how long a rotated secret keeps signing. Default 24h.
	SecretGrace Duration `yaml:"secretGrace"`
}

// AgentHandler configures the agent handler.
type AgentHandler struct {
	// Enabled turns the agent handler on: it samples through the owner's
	// connected client, or Endpoint when none is connected.
	Enabled bool `yaml:"enabled"`
	// Endpoint is an OpenAI-compatible chat-completions endpoint.
	Endpoint *AgentEndpoint `yaml:"endpoint"`
	// MaxTurns bounds the LLM calls of one run. Default 8.
	MaxTurns int `yaml:"maxTurns"`
	// MaxTokens is an answer's token limit when the subscription sets none.
	// Default 1024.
	MaxTokens int `yaml:"maxTokens"`
	// MaxRunTime bounds one run. Default 2m.
	MaxRunTime Duration `yaml:"maxRunTime"`
}

// AgentEndpoint is an OpenAI-compatible chat-completions endpoint.
type AgentEndpoint struct {
	// URL is the full chat-completions URL, e.g.
	// "https://api.openai.com/v1/chat/completions".
	URL string `yaml:"url"`
	// APIKey is sent as a bearer token; optional.
	APIKey *Secret `yaml:"apiKey"`
	// Model is the model asked for.
	Model string `yaml:"model"`
}

var (
	commandName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	secretName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	envName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func (h *Handlers) validate() error {
	if h.Concurrency < 0 {
		return errors.New("handlers.concurrency must be positive (or left out for 32)")
	}
	if b := h.Bash; b != nil {
		if err := b.validate(); err != nil {
			return err
		}
	}
	if w := h.Webhook; w != nil {
		if err := w.validate(); err != nil {
			return err
		}
	}
	if a := h.Agent; a != nil {
		if err := a.validate(); err != nil {
			return err
		}
	}
	return nil
}

func (b *BashHandler) validate() error {
	switch b.Sandbox {
	case "", "auto", "bwrap", "off":
	default:
		return fmt.Errorf("handlers.bash.sandbox %q: use \"auto\" (bubblewrap when installed), \"bwrap\" (required) or \"off\"", b.Sandbox)
	}
	if b.MaxConcurrent < 0 {
		return errors.New("handlers.bash.maxConcurrent must be positive (or left out for 4)")
	}
	if err := checkTimeouts("handlers.bash", b.DefaultTimeout, b.MaxTimeout, defaultBashTimeout); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(b.Commands)) {
		c := b.Commands[name]
		field := "handlers.bash.commands." + name
		if !commandName.MatchString(name) {
			return fmt.Errorf("%s: a command name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", field)
		}
		if c.Path == "" || !filepath.IsAbs(c.Path) {
			return fmt.Errorf("%s.path %q: give the program's absolute path, e.g. /usr/bin/notify-send", field, c.Path)
		}
		for k := range c.Env {
			if !envName.MatchString(k) || strings.HasPrefix(k, "MCPE_") {
				return fmt.Errorf("%s.env: %q is not a variable name the operator may set (letters, digits and '_', not starting with MCPE_)", field, k)
			}
		}
		for i, p := range c.WritablePaths {
			if !filepath.IsAbs(p) {
				return fmt.Errorf("%s.writablePaths[%d] %q: give an absolute path", field, i, p)
			}
		}
	}
	return nil
}

func (w *WebhookHandler) validate() error {
	if _, err := w.Networks(); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(w.Secrets)) {
		field := "handlers.webhook.secrets." + name
		if !secretName.MatchString(name) {
			return fmt.Errorf("%s: a secret name is letters, digits and '_', not starting with a digit, as written in ${NAME}", field)
		}
		if _, err := w.Secrets[name].Value(field); err != nil {
			return err
		}
	}
	if err := checkTimeouts("handlers.webhook", w.DefaultTimeout, w.MaxTimeout, defaultWebhookTimeout); err != nil {
		return err
	}
	for i, d := range w.RetrySchedule {
		if d <= 0 {
			return fmt.Errorf("handlers.webhook.retrySchedule[%d]: give a positive duration such as \"30s\"", i)
		}
	}
	return nil
}

// Networks returns AllowNetworks as prefixes; a single address is a /32 or
// /128.
func (w *WebhookHandler) Networks() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, n := range w.AllowNetworks {
		if p, err := netip.ParsePrefix(n); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(n)
		if err != nil {
			return nil, fmt.Errorf("handlers.webhook.allowNetworks[%d] %q: give an address or a CIDR range, e.g. \"10.0.0.0/8\" or \"127.0.0.1\"", i, n)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// SecretValues reads the webhook secrets.
func (w *WebhookHandler) SecretValues() (map[string]string, error) {
	out := make(map[string]string, len(w.Secrets))
	for name, s := range w.Secrets {
		v, err := s.Value("handlers.webhook.secrets." + name)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// The handlers' default timeouts, which a maxTimeout given alone must not
// be under.
const (
	defaultBashTimeout    = 30 * time.Second
	defaultWebhookTimeout = 10 * time.Second
)

// checkTimeouts checks a handler's defaultTimeout against its maxTimeout;
// def is the default timeout when defaultTimeout is left out.
func checkTimeouts(field string, defaultTimeout, maxTimeout Duration, def time.Duration) error {
	d, m := time.Duration(defaultTimeout), time.Duration(maxTimeout)
	switch {
	case m == 0:
		return nil
	case d > m:
		return fmt.Errorf("%s.defaultTimeout %v is longer than %s.maxTimeout %v", field, d, field, m)
	case d == 0 && def > m:
		return fmt.Errorf("%s.maxTimeout %v is shorter than the default timeout %v; set %s.defaultTimeout too", field, m, def, field)
	}
	return nil
}

// Bounds of the agent handler's settings.
const (
	maxAgentTurns  = 1000
	maxAgentTokens = 64000
)

func (a *AgentHandler) validate() error {
	if a.MaxTurns < 0 || a.MaxTurns > maxAgentTurns {
		return fmt.Errorf("handlers.agent.maxTurns is %d; give a number from 1 to %d (or leave it out for 8)", a.MaxTurns, maxAgentTurns)
	}
	if a.MaxTokens < 0 || a.MaxTokens > maxAgentTokens {
		return fmt.Errorf("handlers.agent.maxTokens is %d; give a number from 1 to %d (or leave it out for 1024)", a.MaxTokens, maxAgentTokens)
	}
	e := a.Endpoint
	if e == nil {
		return nil
	}
	if e.Model == "" {
		return errors.New("handlers.agent.endpoint.model is required: the model the endpoint serves, e.g. \"gpt-4o-mini\"")
	}
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("handlers.agent.endpoint.url %q: give the full chat-completions URL, e.g. \"https://api.openai.com/v1/chat/completions\"", e.URL)
	}
	if e.APIKey != nil {
		if _, err := e.APIKey.Value("handlers.agent.endpoint.apiKey"); err != nil {
			return err
		}
	}
	return nil
}
