package config

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/handlers/agent"
	"github.com/mcpe-server/mcpe-server/handlers/bash"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

func TestParseHandlers(t *testing.T) {
	t.Setenv("MCPE_TEST_HOOK_TOKEN", "hook-secret")
	c, err := Parse(strings.NewReader(`
handlers:
  concurrency: 8
  bash:
    sandbox: bwrap
    commands:
      notify:
        path: /usr/bin/notify-send
        env: {DISPLAY: ":0"}
      rollback:
        path: /opt/deploy/rollback.sh
        network: true
        writablePaths: [/var/tmp/rollback]
  webhook:
    enabled: true
    allowNetworks: ["127.0.0.1", "10.0.0.0/8"]
    secrets:
      HOOK: {tokenEnv: MCPE_TEST_HOOK_TOKEN, urls: ["https://hooks.example.com/mcpe/"]}
  agent:
    enabled: true
    url: https://llm.example.com/v1/chat/completions
    model: small
    token: k
`))
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handlers
	if h.Concurrency != 8 || h.Bash.Sandbox != "bwrap" ||
		h.Bash.Commands["rollback"].Path != "/opt/deploy/rollback.sh" || !h.Bash.Commands["rollback"].Network ||
		h.Bash.Commands["notify"].Env["DISPLAY"] != ":0" {
		t.Errorf("bash: %+v", h.Bash)
	}
	nets, err := h.Webhook.Networks()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}, nets,
		cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("networks (-want +got):\n%s", diff)
	}
	secrets, err := h.Webhook.SecretValues()
	if err != nil || !cmp.Equal(secrets["HOOK"], webhook.Secret{Value: "hook-secret", URLs: []string{"https://hooks.example.com/mcpe/"}}) {
		t.Errorf("secrets %v, %v", secrets, err)
	}
	if h.Agent.Model != "small" {
		t.Errorf("agent: %+v", h.Agent)
	}
}

// TestBashTimeoutsFollowRunTimeout: a bash subscription's timeout may be
// at most half of handlers.runTimeout, and the default timeout is never
// longer than that.
func TestBashTimeoutsFollowRunTimeout(t *testing.T) {
	for y, want := range map[string][2]time.Duration{
		"handlers:\n  bash: {}\n":                    {30 * time.Second, 5 * time.Minute},
		"handlers:\n  runTimeout: 1h\n  bash: {}\n":  {30 * time.Second, 30 * time.Minute},
		"handlers:\n  runTimeout: 20s\n  bash: {}\n": {10 * time.Second, 10 * time.Second},
	} {
		c, err := Parse(strings.NewReader(y))
		if err != nil {
			t.Fatalf("Parse(%q): %v", y, err)
		}
		o := c.Handlers.BashOptions()
		if got := [2]time.Duration{o.DefaultTimeout, o.MaxTimeout}; got != want {
			t.Errorf("Parse(%q): default and max timeout %v; want %v", y, got, want)
		}
	}
}

func TestParseHandlerErrors(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"handlers:\n  concurrency: -1\n", "handlers.concurrency: is -1; give a positive number"},
		{"handlers:\n  bash:\n    sandbox: docker\n", `handlers.bash.sandbox: "docker" is not a sandbox mode; use "auto"`},
		{"handlers:\n  bash:\n    commands:\n      notify: {path: notify-send}\n", `handlers.bash.commands.notify.path: "notify-send" is not an absolute path; give the program's absolute path`},
		{"handlers:\n  bash:\n    commands:\n      'a b': {path: /bin/true}\n", `handlers.bash.commands.a b: a command name is`},
		{"handlers:\n  bash:\n    commands:\n      x: {path: /bin/true, env: {MCPE_EVENT_ID: x}}\n", `handlers.bash.commands.x.env: "MCPE_EVENT_ID" is not a variable name`},
		{"handlers:\n  bash:\n    commands:\n      x: {path: /bin/true, memoryBytes: -2}\n", `handlers.bash.commands.x.memoryBytes: is -2; give a positive number of bytes, -1 for no limit`},
		{"handlers:\n  webhook:\n    allowNetworks: [localhost]\n", `handlers.webhook.allowNetworks[0]: "localhost" is not an address or a CIDR range`},
		{"handlers:\n  webhook:\n    secrets:\n      '1X': {token: a, urls: ['https://h/']}\n", "handlers.webhook.secrets.1X: a secret name is"},
		{"handlers:\n  webhook:\n    secrets:\n      X: {tokenEnv: MCPE_TEST_UNSET_VARIABLE}\n", "handlers.webhook.secrets.X.tokenEnv: environment variable MCPE_TEST_UNSET_VARIABLE is not set"},
		{"handlers:\n  webhook:\n    secrets:\n      X: {token: a, urls: ['hooks.example.com']}\n", `handlers.webhook.secrets.X.urls[0]: "hooks.example.com" is not a URL prefix; give scheme, host`},
		{"handlers:\n  webhook:\n    secrets:\n      X: {token: a, urls: ['https://hooks.example.com/?x']}\n", `handlers.webhook.secrets.X.urls[0]: "https://hooks.example.com/?x" has a query`},
		{"handlers:\n  agent:\n    {url: 'ftp://x', model: m}\n", `handlers.agent.url: "ftp://x" is not an http or https URL; give the full chat-completions URL`},
		{"handlers:\n  agent:\n    {url: 'https://x/v1/chat/completions'}\n", "handlers.agent.model: is required"},
		{"handlers:\n  agent:\n    {url: 'https://x/v1/chat/completions', model: m, tokenEnv: MCPE_TEST_UNSET_VARIABLE}\n", "handlers.agent.tokenEnv: environment variable MCPE_TEST_UNSET_VARIABLE is not set"},
		{"handlers:\n  runTimeout: 100ms\n", "handlers.runTimeout: is 100ms; give a duration from 1s to 24h"},
		{"handlers:\n  agent:\n    modle: m\n", `handlers.agent.modle: unknown key; did you mean "model"?`},
		{"handlers:\n  webhook:\n    verifiedURLs: ['http://hooks.example.com/']\n", `handlers.webhook.verifiedURLs[0]: "http://hooks.example.com/" uses the scheme "http"; SEP-3415 callback URLs are https only, give an https URL prefix such as "https://hooks.example.com/mcp/"`},
		{"handlers:\n  webhook:\n    verifiedURLs: ['https://ok.example/', 'hooks.example.com/mcp']\n", `handlers.webhook.verifiedURLs[1]: "hooks.example.com/mcp" is not a URL prefix; give scheme, host`},
		{"handlers:\n  webhook:\n    verifiedURLs: ['https://me:pw@hooks.example.com/']\n", `handlers.webhook.verifiedURLs[0]: "https://me:pw@hooks.example.com/" contains user information`},
		{"handlers:\n  webhook:\n    verifiedURLs: ['https://hooks.example.com/mcp?tenant=1']\n", `handlers.webhook.verifiedURLs[0]: "https://hooks.example.com/mcp?tenant=1" has a query or a fragment`},
		{"handlers:\n  webhook:\n    verifiedURLs: ['https://hooks.example.com/mcp#x']\n", `handlers.webhook.verifiedURLs[0]: "https://hooks.example.com/mcp#x" has a query or a fragment`},
		{"handlers:\n  webhook:\n    verifiedURLs: ['https://hooks.example.com/" + strings.Repeat("a", 2048) + "']\n", "handlers.webhook.verifiedURLs[0]: is 2074 bytes long; at most 2048 are accepted"},
		{"handlers:\n  webhook:\n    verifiedURLs: [" + strings.Repeat("'https://h.example/',", 100) + "'https://h.example/']\n", "handlers.webhook.verifiedURLs: has 101 entries; at most 100 are accepted"},
	} {
		_, err := Parse(strings.NewReader(tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v; want an error containing %q", tt.yaml, err, tt.want)
		}
	}
}

// TestWebhookSecretWithoutURLs checks that a secret written as before
// handlers.webhook.secrets took urls is refused, saying what to add: left
// as it was, it would go to any URL a model names.
func TestWebhookSecretWithoutURLs(t *testing.T) {
	for _, y := range []string{
		"handlers:\n  webhook:\n    enabled: true\n    secrets:\n      WEBHOOK_TOKEN: {token: s3cret}\n",
		"handlers:\n  webhook:\n    secrets:\n      WEBHOOK_TOKEN: {token: s3cret, urls: []}\n",
	} {
		_, err := Parse(strings.NewReader(y))
		var ie *mcpe.InvalidError
		if !errors.As(err, &ie) || ie.Field != "handlers.webhook.secrets.WEBHOOK_TOKEN.urls" ||
			!strings.Contains(ie.Message, `is required: list the URL prefixes this secret may be sent to, such as urls: ["https://hooks.example.com/"]`) {
			t.Errorf("Parse(%q) = %v; want handlers.webhook.secrets.WEBHOOK_TOKEN.urls refused, saying what to add", y, err)
		}
	}
}

// TestParseErrorNamesTheKey checks that a value a package's Validate
// refuses comes back as an *mcpe.InvalidError whose Field is the whole key.
func TestParseErrorNamesTheKey(t *testing.T) {
	for _, tt := range []struct{ yaml, field string }{
		{"handlers:\n  bash:\n    sandbox: docker\n", "handlers.bash.sandbox"},
		{"handlers:\n  webhook:\n    secrets:\n      X: {}\n", "handlers.webhook.secrets.X"},
		{"handlers:\n  agent:\n    {url: 'ftp://x', model: m}\n", "handlers.agent.url"},
		{"adapters:\n  github:\n    token: x\n    priorityLabels: {P0: urgent}\n", "adapters.github.priorityLabels.P0"},
		{"adapters:\n  mcp:\n    upstreams: [{name: a, url: 'ftp://x'}]\n", "adapters.mcp.upstreams[0].url"},
	} {
		_, err := Parse(strings.NewReader(tt.yaml))
		var ie *mcpe.InvalidError
		if !errors.As(err, &ie) || ie.Field != tt.field {
			t.Errorf("Parse(%q) = %v (%T); want an *mcpe.InvalidError for %s", tt.yaml, err, err, tt.field)
		}
	}
}

// TestHandlerOptions checks what each handler section turns into. A
// command's program is not looked for on disk: bash.New does that when the
// server starts.
func TestHandlerOptions(t *testing.T) {
	t.Setenv("MCPE_TEST_HOOK_TOKEN", "hook-secret")
	c, err := Parse(strings.NewReader(`
handlers:
  bash:
    sandbox: "off"
    commands:
      notify: {path: /nonexistent/notify-send, env: {DISPLAY: ":0"}}
      sort: {path: /usr/bin/sort, allowOptions: false}
      tagged: {path: /usr/bin/tagged, allowOptionPlaceholders: true}
      big:
        path: /opt/big
        readablePaths: [/home/mcpe/lib]
        memoryBytes: 4294967296
  webhook:
    allowHTTP: true
    allowNetworks: ["127.0.0.1"]
    secrets:
      HOOK: {tokenEnv: MCPE_TEST_HOOK_TOKEN, urls: ["https://hooks.example.com/"]}
    verifiedURLs: ["https://gateway.example.com/mcp/"]
  agent:
    {url: "https://llm.example.com/v1/chat/completions", model: small, token: k}
`))
	if err != nil {
		t.Fatal(err)
	}
	no := false
	wantBash := bash.Options{
		Commands: map[string]bash.Command{
			"notify": {Path: "/nonexistent/notify-send", Env: map[string]string{"DISPLAY": ":0"}},
			"sort":   {Path: "/usr/bin/sort", AllowOptions: &no},
			"tagged": {Path: "/usr/bin/tagged", AllowOptionPlaceholders: true},
			"big": {Path: "/opt/big", ReadablePaths: []string{"/home/mcpe/lib"},
				Limits: bash.Limits{MemoryBytes: 4 << 30}},
		},
		// Derived from handlers.concurrency and runTimeout, here their defaults.
		DefaultTimeout: bash.DefaultTimeout,
		MaxTimeout:     5 * time.Minute,
		MaxConcurrent:  4,
		Sandbox:        bash.SandboxOff,
	}
	if diff := cmp.Diff(wantBash, c.Handlers.BashOptions()); diff != "" {
		t.Errorf("bash options mismatch (-want +got):\n%s", diff)
	}

	hook, err := c.Handlers.Webhook.Options()
	if err != nil {
		t.Fatal(err)
	}
	wantHook := webhook.Options{
		AllowHTTP:     true,
		AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Secrets:       map[string]webhook.Secret{"HOOK": {Value: "hook-secret", URLs: []string{"https://hooks.example.com/"}}},
		VerifiedURLs:  []string{"https://gateway.example.com/mcp/"},
	}
	if diff := cmp.Diff(wantHook, hook, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("webhook options mismatch (-want +got):\n%s", diff)
	}

	ag, err := c.Handlers.Agent.Options()
	if err != nil {
		t.Fatal(err)
	}
	wantAgent := agent.Options{
		Endpoint: &agent.Endpoint{URL: "https://llm.example.com/v1/chat/completions", Model: "small", APIKey: "k"},
	}
	if diff := cmp.Diff(wantAgent, ag); diff != "" {
		t.Errorf("agent options mismatch (-want +got):\n%s", diff)
	}
}
