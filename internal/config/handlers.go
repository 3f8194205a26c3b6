package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/mcpe-server/mcpe-server/handlers"
	"github.com/mcpe-server/mcpe-server/handlers/agent"
	"github.com/mcpe-server/mcpe-server/handlers/bash"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Handlers configures the handlers subscriptions may carry. Each type is off
// until configured here.
type Handlers struct {
	// Concurrency bounds the handler runs in progress. Default 32.
	Concurrency int `yaml:"concurrency"`
	// RunTimeout is a ceiling on one run, above each handler's own
	// timeouts; a run past it is cut off and retried. It also sizes the
	// lease by which servers sharing a database claim runs, and half of it
	// is the longest timeout a bash subscription may set. Default 10m.
	RunTimeout Duration `yaml:"runTimeout"`
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
	// ReadablePaths are paths it may read inside the sandbox although
	// they lie in a hidden directory, such as the server user's home.
	ReadablePaths []string `yaml:"readablePaths"`
	// AllowOptions lets a subscription's arguments start with '-'; false
	// gives the program operands only. Default true.
	AllowOptions *bool `yaml:"allowOptions"`
	// AllowOptionPlaceholders lets a placeholder expand to an argument
	// that starts with '-' (event content read as an option). Default
	// false: such a run is refused.
	AllowOptionPlaceholders bool `yaml:"allowOptionPlaceholders"`
	// MemoryBytes bounds each of the program's processes' data
	// (RLIMIT_DATA); -1 lifts it. Default 1 GiB; its other limits are
	// fixed.
	MemoryBytes int64 `yaml:"memoryBytes"`
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
	// Secrets fill ${NAME} in the header values of webhooks whose URL is
	// under one of the secret's urls.
	Secrets map[string]WebhookSecret `yaml:"secrets"`
	// VerifiedURLs are prefixes of SEP-3415 callback URLs whose endpoints
	// the operator vouches for (allowlisted, or verified out of band):
	// events/subscribe to a URL under one delivers without a challenge.
	// Each is https://host[:port][/path]; at most 100.
	VerifiedURLs []string `yaml:"verifiedURLs"`
}

// WebhookSecret is a secret for webhook headers and where it may be sent.
type WebhookSecret struct {
	Secret `yaml:",inline"`
	// URLs are the URL prefixes of the webhooks it may be sent to, e.g.
	// ["https://hooks.example.com/"]; required. webhook.Secret says what
	// matches.
	URLs []string `yaml:"urls"`
}

// AgentHandler configures the agent handler.
type AgentHandler struct {
	// Enabled turns the agent handler on: it samples through the owner's
	// connected client, or the endpoint at URL when none is connected.
	Enabled bool `yaml:"enabled"`
	// URL is an OpenAI-compatible endpoint's full chat-completions URL,
	// e.g. "https://api.openai.com/v1/chat/completions"; empty, none.
	URL string `yaml:"url"`
	// Model is the model asked of the endpoint.
	Model string `yaml:"model"`
	// Secret (token or tokenEnv) is the endpoint's API key, sent as a
	// bearer token; optional.
	Secret `yaml:",inline"`
}

func (h *Handlers) validate() error {
	return errors.Join(
		Within("handlers", (&handlers.Options{Concurrency: h.Concurrency, RunTimeout: time.Duration(h.RunTimeout)}).Validate()),
		checkSection("handlers.bash", h.Bash, func(*BashHandler) (bash.Options, error) { return h.BashOptions(), nil }),
		checkSection("handlers.webhook", h.Webhook, (*WebhookHandler).Options),
		checkSection("handlers.agent", h.Agent, (*AgentHandler).Options),
	)
}

// BashOptions returns the bash handler's options as configured: a
// subscription's timeout is at most half of runTimeout, and an eighth of
// concurrency run at once (4 of 32). The caller adds the Logger and the
// HiddenPaths.
func (h *Handlers) BashOptions() bash.Options {
	commands := make(map[string]bash.Command, len(h.Bash.Commands))
	for name, c := range h.Bash.Commands {
		commands[name] = bash.Command{
			Path: c.Path, Env: c.Env, Network: c.Network, WritablePaths: c.WritablePaths, ReadablePaths: c.ReadablePaths,
			AllowOptions: c.AllowOptions, AllowOptionPlaceholders: c.AllowOptionPlaceholders,
			Limits: bash.Limits{MemoryBytes: c.MemoryBytes},
		}
	}
	maxTimeout := cmp.Or(time.Duration(h.RunTimeout), handlers.DefaultRunTimeout) / 2
	return bash.Options{
		Commands:       commands,
		DefaultTimeout: min(bash.DefaultTimeout, maxTimeout),
		MaxTimeout:     maxTimeout,
		MaxConcurrent:  max(1, cmp.Or(h.Concurrency, handlers.DefaultConcurrency)/8),
		Sandbox:        h.Bash.Sandbox,
	}
}

// Options returns the webhook handler's options as configured, with the
// secrets read; the caller adds the Logger. An error names the key under
// handlers.webhook.
func (w *WebhookHandler) Options() (webhook.Options, error) {
	networks, err := w.Networks()
	if err != nil {
		return webhook.Options{}, err
	}
	secrets, err := w.SecretValues()
	if err != nil {
		return webhook.Options{}, err
	}
	return webhook.Options{AllowHTTP: w.AllowHTTP, AllowNetworks: networks, Secrets: secrets, VerifiedURLs: w.VerifiedURLs}, nil
}

// Networks returns AllowNetworks as prefixes; a single address is a /32 or
// /128. An error names the key under handlers.webhook.
func (w *WebhookHandler) Networks() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, n := range w.AllowNetworks {
		if p, err := netip.ParsePrefix(n); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(n)
		if err != nil {
			return nil, mcpe.Invalid(fmt.Sprintf("allowNetworks[%d]", i), "%q is not an address or a CIDR range; give e.g. \"10.0.0.0/8\" or \"127.0.0.1\"", n)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// SecretValues reads the webhook secrets, each with the URLs it may be sent
// to. An error names the key under handlers.webhook.
func (w *WebhookHandler) SecretValues() (map[string]webhook.Secret, error) {
	out := make(map[string]webhook.Secret, len(w.Secrets))
	for _, name := range slices.Sorted(maps.Keys(w.Secrets)) {
		s := w.Secrets[name]
		v, err := s.Value("secrets." + name)
		if err != nil {
			return nil, err
		}
		out[name] = webhook.Secret{Value: v, URLs: s.URLs}
	}
	return out, nil
}

// Options returns the agent handler's options as configured, with the API
// key read; the caller adds the Sessions, Tools and Logger. An error names
// the key under handlers.agent.
func (a *AgentHandler) Options() (agent.Options, error) {
	if a.URL == "" && a.Model == "" && a.Secret == (Secret{}) {
		return agent.Options{}, nil
	}
	ep := &agent.Endpoint{URL: a.URL, Model: a.Model}
	if a.Secret != (Secret{}) {
		var err error
		if ep.APIKey, err = a.Value(""); err != nil {
			return agent.Options{}, err
		}
	}
	return agent.Options{Endpoint: ep}, nil
}
