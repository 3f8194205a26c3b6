package config

import (
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
	// PerPrincipal bounds the handler runs of one principal in progress or
	// waiting, so that one principal's runs cannot hold every worker.
	// Default a quarter of concurrency (8 of 32); at most concurrency.
	PerPrincipal int `yaml:"perPrincipal"`
	// RunTimeout is a ceiling on one run, above each handler's own
	// timeouts; a run past it is cut off and retried. It also sizes the
	// lease by which servers sharing a database claim runs. Default 10m.
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
	// ReadablePaths are paths it may read inside the sandbox although
	// they lie in a hidden directory, such as the server user's home.
	ReadablePaths []string `yaml:"readablePaths"`
	// ReadOnlyRoot keeps the file system read-only inside the sandbox.
	// Default true.
	ReadOnlyRoot *bool `yaml:"readOnlyRoot"`
	// AllowOptions lets a subscription's arguments start with '-'; false
	// gives the program operands only. Default true.
	AllowOptions *bool `yaml:"allowOptions"`
	// AllowOptionPlaceholders lets a placeholder expand to an argument
	// that starts with '-' (event content read as an option). Default
	// false: such a run is refused.
	AllowOptionPlaceholders bool `yaml:"allowOptionPlaceholders"`
	// Limits bound the program's resources.
	Limits BashLimits `yaml:"limits"`
}

// BashLimits bound an allowed program's resources (setrlimit on its process);
// -1 lifts a limit.
type BashLimits struct {
	// Processes bounds the processes and threads (RLIMIT_NPROC). Default
	// 128 inside the sandbox, none without it.
	Processes int `yaml:"processes"`
	// MemoryBytes bounds each process's data (RLIMIT_DATA). Default 1 GiB.
	MemoryBytes int64 `yaml:"memoryBytes"`
	// FileBytes bounds a file it writes (RLIMIT_FSIZE). Default 64 MiB.
	FileBytes int64 `yaml:"fileBytes"`
	// OpenFiles bounds each process's open files (RLIMIT_NOFILE). Default
	// 256.
	OpenFiles int `yaml:"openFiles"`
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
	// VerifiedURLs are prefixes of SEP-3415 callback URLs whose endpoints
	// the operator vouches for (allowlisted, or verified out of band):
	// events/subscribe to a URL under one delivers without a challenge.
	// Each is https://host[:port][/path]; at most 100.
	VerifiedURLs []string `yaml:"verifiedURLs"`
	// WellKnownReceivers looks up the /.well-known/mcp-webhook-receiver.json
	// of a callback URL's origin before sending a challenge. Default true.
	WellKnownReceivers *bool `yaml:"wellKnownReceivers"`
	// ChallengesPerHostPerMinute bounds the verification challenges and
	// document lookups sent to one host, whichever principals subscribe:
	// that many at once, then that many per minute. Default 30.
	ChallengesPerHostPerMinute int `yaml:"challengesPerHostPerMinute"`
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

func (h *Handlers) validate() error {
	if err := (&handlers.Options{Concurrency: h.Concurrency, PerPrincipal: h.PerPrincipal, RunTimeout: time.Duration(h.RunTimeout)}).Validate(); err != nil {
		return Within("handlers", err)
	}
	if b := h.Bash; b != nil {
		opts := b.Options()
		if err := opts.Validate(); err != nil {
			return Within("handlers.bash", err)
		}
	}
	if w := h.Webhook; w != nil {
		opts, err := w.Options()
		if err == nil {
			err = opts.Validate()
		}
		if err != nil {
			return Within("handlers.webhook", err)
		}
	}
	if a := h.Agent; a != nil {
		opts, err := a.Options()
		if err == nil {
			err = opts.Validate()
		}
		if err != nil {
			return Within("handlers.agent", err)
		}
	}
	return nil
}

// Options returns the bash handler's options as configured; the caller adds
// the Logger and the HiddenPaths.
func (b *BashHandler) Options() bash.Options {
	commands := make(map[string]bash.Command, len(b.Commands))
	for name, c := range b.Commands {
		commands[name] = bash.Command{
			Path: c.Path, Env: c.Env, Network: c.Network, WritablePaths: c.WritablePaths, ReadablePaths: c.ReadablePaths,
			ReadOnlyRoot: c.ReadOnlyRoot, AllowOptions: c.AllowOptions, AllowOptionPlaceholders: c.AllowOptionPlaceholders,
			Limits: bash.Limits(c.Limits),
		}
	}
	return bash.Options{
		Commands:       commands,
		DefaultTimeout: time.Duration(b.DefaultTimeout),
		MaxTimeout:     time.Duration(b.MaxTimeout),
		MaxConcurrent:  b.MaxConcurrent,
		Sandbox:        b.Sandbox,
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
	var schedule []time.Duration
	for _, d := range w.RetrySchedule {
		schedule = append(schedule, time.Duration(d))
	}
	return webhook.Options{
		AllowHTTP:      w.AllowHTTP,
		AllowNetworks:  networks,
		Secrets:        secrets,
		DefaultTimeout: time.Duration(w.DefaultTimeout),
		MaxTimeout:     time.Duration(w.MaxTimeout),
		RetrySchedule:  schedule,
		VerifiedURLs:   w.VerifiedURLs,
		// Off only when set to false.
		NoWellKnownReceivers:       w.WellKnownReceivers != nil && !*w.WellKnownReceivers,
		ChallengesPerHostPerMinute: w.ChallengesPerHostPerMinute,
	}, nil
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
	opts := agent.Options{
		DefaultMaxTokens: a.MaxTokens,
		MaxTurns:         a.MaxTurns,
		MaxRunTime:       time.Duration(a.MaxRunTime),
	}
	if e := a.Endpoint; e != nil {
		opts.Endpoint = &agent.Endpoint{URL: e.URL, Model: e.Model}
		if e.APIKey != nil {
			key, err := e.APIKey.Value("endpoint.apiKey")
			if err != nil {
				return agent.Options{}, err
			}
			opts.Endpoint.APIKey = key
		}
	}
	return opts, nil
}
