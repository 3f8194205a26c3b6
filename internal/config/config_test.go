package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseValid(t *testing.T) {
	t.Setenv("MCPE_TEST_ALICE_TOKEN", "alice-secret")
	t.Setenv("MCPE_TEST_INGEST_TOKEN", "ingest-secret-2")
	tests := []struct {
		name string
		yaml string
		want Config
	}{
		{name: "empty file", yaml: "", want: Config{}},
		{name: "only blank lines", yaml: "\n  \n\t\n", want: Config{}},
		{name: "only a comment", yaml: "# nothing configured yet\n", want: Config{}},
		{name: "empty sections", yaml: "http:\ninbox:\nlog:\n", want: Config{}},
		{name: "metrics on the HTTP listener with auth", yaml: "auth:\n  tokens:\n    - principal: a\n      token: x\nmetrics:\n  enabled: true\n  principalLabel: true\n  tokens:\n    - token: scrape\n", want: Config{
			Auth:    Auth{Tokens: []PrincipalToken{{Principal: "a", Secret: Secret{Token: "x"}}}},
			Metrics: Metrics{Enabled: true, PrincipalLabel: true, Tokens: []Secret{{Token: "scrape"}}},
		}},
		{name: "metrics on a loopback listener of their own", yaml: "metrics:\n  addr: 127.0.0.1:9464\n", want: Config{Metrics: Metrics{Addr: "127.0.0.1:9464"}}},
		{
			name: "full file",
			yaml: `
db: /var/lib/mcpe/events.db
http:
  addr: 127.0.0.1:8765
auth:
  tokens:
    - principal: alice
      tokenEnv: MCPE_TEST_ALICE_TOKEN
    - principal: bob
      token: bob-secret
  ingestTokens:
    - token: ingest-secret-1
    - tokenEnv: MCPE_TEST_INGEST_TOKEN
subscriptions:
  maxPerPrincipal: 20
inbox:
  maxEntries: 500
  maxAge: 7d
log:
  level: debug
  format: json
`,
			want: Config{
				DB:   "/var/lib/mcpe/events.db",
				HTTP: HTTP{Addr: "127.0.0.1:8765"},
				Auth: Auth{Tokens: []PrincipalToken{
					{Principal: "alice", Secret: Secret{TokenEnv: "MCPE_TEST_ALICE_TOKEN"}},
					{Principal: "bob", Secret: Secret{Token: "bob-secret"}},
				}, IngestTokens: []Secret{
					{Token: "ingest-secret-1"},
					{TokenEnv: "MCPE_TEST_INGEST_TOKEN"},
				}},
				Subscriptions: Subscriptions{MaxPerPrincipal: 20},
				Inbox:         Inbox{MaxEntries: 500, MaxAge: Duration(168 * time.Hour)},
				Log:           Log{Level: "debug", Format: "json"},
			},
		},
		{name: "zero limits mean defaults", yaml: "subscriptions:\n  maxPerPrincipal: 0\ninbox:\n  maxEntries: 0\n", want: Config{}},
		{name: "0d", yaml: "inbox:\n  maxAge: 0d\n", want: Config{}},
		{name: "1d", yaml: "inbox:\n  maxAge: 1d\n", want: Config{Inbox: Inbox{MaxAge: Duration(24 * time.Hour)}}},
		{name: "Go duration with units", yaml: "inbox:\n  maxAge: 1h30m\n", want: Config{Inbox: Inbox{MaxAge: Duration(90 * time.Minute)}}},
		{name: "quoted duration", yaml: "inbox:\n  maxAge: \"15m\"\n", want: Config{Inbox: Inbox{MaxAge: Duration(15 * time.Minute)}}},
		{name: "log levels are case-insensitive", yaml: "log:\n  level: WARN\n", want: Config{Log: Log{Level: "WARN"}}},
		{name: "warning is warn", yaml: "log:\n  level: warning\n", want: Config{Log: Log{Level: "warning"}}},
		{name: "text format", yaml: "log:\n  format: text\n", want: Config{Log: Log{Format: "text"}}},
		{
			name: "one principal with two tokens",
			yaml: "auth:\n  tokens:\n    - principal: alice\n      token: a1\n    - principal: alice\n      token: a2\n",
			want: Config{Auth: Auth{Tokens: []PrincipalToken{
				{Principal: "alice", Secret: Secret{Token: "a1"}},
				{Principal: "alice", Secret: Secret{Token: "a2"}},
			}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Setenv("MCPE_TEST_SET_TOKEN", "shared-secret")
	t.Setenv("MCPE_TEST_EMPTY_TOKEN", "")
	tests := []struct {
		name string
		yaml string
		// want are parts of the error text: the key (or line) it is about
		// and what is wrong.
		want []string
	}{
		{name: "unknown top-level key", yaml: "db: x\nlistener: 1\n", want: []string{"line 2: listener: unknown key", "The keys at the top level are: db, http, auth"}},
		{name: "every problem at once", yaml: "subscriptions:\n  maxPerPrincipal: -1\nlog:\n  format: xml\nauth:\n  tokens:\n    - principal: a\n      tokenEnv: MCPE_TEST_UNSET_TOKEN\n", want: []string{"subscriptions.maxPerPrincipal", `log.format "xml"`, "MCPE_TEST_UNSET_TOKEN is not set"}},
		{name: "misspelt key", yaml: "http:\n  adr: 127.0.0.1:1\n", want: []string{`line 2: http.adr: unknown key; did you mean "addr"?`, "The keys under http are: addr, stateless"}},
		{name: "several unknown keys", yaml: "http:\n  adr: 1\ninbx: {}\n", want: []string{"2 problems", "http.adr", `inbx: unknown key; did you mean "inbox"?`}},
		{name: "misspelled nested key", yaml: "inbox:\n  maxEntries: 5\n  maxAgee: 1h\n", want: []string{"line 3", "maxAgee"}},
		{name: "unknown key in a token", yaml: "auth:\n  tokens:\n    - principal: a\n      token: x\n      secret: y\n", want: []string{"line 5", "secret"}},
		{name: "not a mapping", yaml: "- db\n", want: []string{"line 1"}},
		{name: "broken YAML", yaml: "db: [\n", want: []string{"line 1"}},
		{name: "wrong type for a number", yaml: "inbox:\n  maxEntries: many\n", want: []string{"line 2", "many"}},

		{name: "stateless without tokens", yaml: "http:\n  stateless: true\n", want: []string{"http.stateless needs auth.tokens"}},

		{name: "principal missing", yaml: "auth:\n  tokens:\n    - token: x\n", want: []string{"auth.tokens[0].principal is required"}},
		{name: "principal missing in second token", yaml: "auth:\n  tokens:\n    - principal: a\n      token: x\n    - token: y\n", want: []string{"auth.tokens[1].principal is required"}},
		{name: "reserved session: prefix", yaml: "auth:\n  tokens:\n    - principal: \"session:abc\"\n      token: x\n", want: []string{"auth.tokens[0].principal", `"session:abc"`, "reserved"}},
		{name: "principal too long", yaml: "auth:\n  tokens:\n    - principal: " + strings.Repeat("p", 129) + "\n      token: x\n", want: []string{"auth.tokens[0].principal is longer than 128 characters"}},
		{name: "token and tokenEnv", yaml: "auth:\n  tokens:\n    - principal: a\n      token: x\n      tokenEnv: MCPE_TEST_SET_TOKEN\n", want: []string{"auth.tokens[0]", "not both"}},
		{name: "neither token nor tokenEnv", yaml: "auth:\n  tokens:\n    - principal: a\n", want: []string{"auth.tokens[0]", "give token", "or tokenEnv"}},
		{name: "tokenEnv not set", yaml: "auth:\n  tokens:\n    - principal: a\n      tokenEnv: MCPE_TEST_UNSET_TOKEN_9F3A\n", want: []string{"auth.tokens[0].tokenEnv", "MCPE_TEST_UNSET_TOKEN_9F3A is not set"}},
		{name: "tokenEnv empty", yaml: "auth:\n  tokens:\n    - principal: a\n      tokenEnv: MCPE_TEST_EMPTY_TOKEN\n", want: []string{"auth.tokens[0].tokenEnv", "MCPE_TEST_EMPTY_TOKEN", "empty"}},
		{name: "duplicate tokens", yaml: "auth:\n  tokens:\n    - principal: a\n      token: same\n    - principal: b\n      token: same\n", want: []string{"auth.tokens[1] has the same token as auth.tokens[0]"}},
		{name: "duplicate token through tokenEnv", yaml: "auth:\n  tokens:\n    - principal: a\n      token: shared-secret\n    - principal: b\n      tokenEnv: MCPE_TEST_SET_TOKEN\n", want: []string{"auth.tokens[1] has the same token as auth.tokens[0]"}},
		{name: "ingest token and tokenEnv", yaml: "auth:\n  ingestTokens:\n    - token: x\n      tokenEnv: MCPE_TEST_SET_TOKEN\n", want: []string{"auth.ingestTokens[0]", "not both"}},
		{name: "ingest token empty", yaml: "auth:\n  ingestTokens:\n    - token: \"\"\n", want: []string{"auth.ingestTokens[0]", "give token"}},
		{name: "metrics without tokens beside auth", yaml: "auth:\n  tokens:\n    - principal: a\n      token: x\nmetrics:\n  enabled: true\n", want: []string{"metrics.tokens: auth.tokens is configured"}},
		{name: "metrics addr not host:port", yaml: "metrics:\n  addr: nine\n", want: []string{"metrics.addr", `"nine" is not host:port`}},
		{name: "metrics addr reachable without tokens", yaml: "metrics:\n  addr: 0.0.0.0:9464\n", want: []string{"metrics.tokens", "reachable from other machines"}},
		{name: "metrics principalLabel without auth", yaml: "metrics:\n  enabled: true\n  principalLabel: true\n", want: []string{"metrics.principalLabel: auth.tokens is empty", "without bound"}},
		{name: "metrics principalLabel without auth on metrics.addr", yaml: "metrics:\n  addr: 127.0.0.1:9464\n  principalLabel: true\n", want: []string{"metrics.principalLabel: auth.tokens is empty"}},
		{name: "metrics tokens while off", yaml: "metrics:\n  tokens:\n    - token: x\n", want: []string{"metrics: tokens or principalLabel are set but metrics are off"}},
		{name: "metrics tokenEnv not set", yaml: "metrics:\n  enabled: true\n  tokens:\n    - tokenEnv: MCPE_TEST_UNSET_TOKEN_9F3A\n", want: []string{"metrics.tokens[0].tokenEnv", "MCPE_TEST_UNSET_TOKEN_9F3A"}},
		{name: "misspelt metrics key", yaml: "metrics:\n  principalLabels: true\n", want: []string{"metrics.principalLabels: unknown key", `did you mean "principalLabel"?`}},
		{name: "ingest tokenEnv not set", yaml: "auth:\n  ingestTokens:\n    - token: x\n    - tokenEnv: MCPE_TEST_UNSET_TOKEN_9F3A\n", want: []string{"auth.ingestTokens[1].tokenEnv", "MCPE_TEST_UNSET_TOKEN_9F3A"}},

		{name: "negative maxPerPrincipal", yaml: "subscriptions:\n  maxPerPrincipal: -1\n", want: []string{"subscriptions.maxPerPrincipal must be positive"}},
		{name: "negative maxEntries", yaml: "inbox:\n  maxEntries: -5\n", want: []string{"inbox.maxEntries must be positive"}},

		{name: "bad log level", yaml: "log:\n  level: loud\n", want: []string{"log.level", `"loud"`, "debug, info, warn or error"}},
		{name: "bad log format", yaml: "log:\n  format: xml\n", want: []string{"log.format", `"xml"`, `"text" or "json"`}},

		{name: "negative duration", yaml: "inbox:\n  maxAge: -5m\n", want: []string{"line 2", "inbox.maxAge", `"-5m" is negative`}},
		{name: "negative days", yaml: "inbox:\n  maxAge: -1d\n", want: []string{"line 2", "inbox.maxAge", `"-1d" is not a duration`}},
		{name: "unknown unit", yaml: "subscriptions:\n  minEvery: 7x\n", want: []string{"line 2", "subscriptions.minEvery", `"7x" is not a duration`}},
		{name: "number without unit", yaml: "inbox:\n  maxAge: 90\n", want: []string{"line 2", "inbox.maxAge", `"90" is not a duration`}},
		{name: "days mixed with units", yaml: "inbox:\n  maxAge: 1d12h\n", want: []string{"line 2", "inbox.maxAge", `"1d12h" is not a duration`}},
		{name: "fractional days", yaml: "inbox:\n  maxAge: 1.5d\n", want: []string{"inbox.maxAge", `"1.5d" is not a duration`}},
		{name: "empty duration", yaml: "inbox:\n  maxAge: \"\"\n", want: []string{"inbox.maxAge", `"" is not a duration`}},
		{name: "duration as a list", yaml: "inbox:\n  maxAge: [1h]\n", want: []string{"line 2", "inbox.maxAge", "want a duration"}},
		{name: "days beyond a time.Duration", yaml: "inbox:\n  maxAge: 106752d\n", want: []string{"inbox.maxAge", `"106752d" is too long`}},
		{name: "short console admin token", yaml: "console:\n  token: short\n", want: []string{"console: the admin token has 5 characters", "at least 16"}},
		{name: "console admin token twice", yaml: "console:\n  token: a-long-admin-token-123\n  tokenEnv: MCPE_TEST_SET_TOKEN\n", want: []string{"console", "not both"}},
		{name: "console admin token unset", yaml: "console:\n  tokenEnv: MCPE_TEST_UNSET_TOKEN\n", want: []string{"console.tokenEnv", "MCPE_TEST_UNSET_TOKEN is not set"}},
		{name: "console admin token is a principal's", yaml: "auth:\n  tokens:\n    - principal: a\n      token: a-long-admin-token-123\nconsole:\n  token: a-long-admin-token-123\n", want: []string{"console", "auth.tokens[0]"}},
		{name: "duration error on a later line", yaml: "db: x\n\ninbox:\n  maxEntries: 3\n  maxAge: soon\n", want: []string{"line 5", "inbox.maxAge", `"soon"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded with %+v; want an error containing %q", got, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "0s", want: 0},
		{in: "90s", want: 90 * time.Second},
		{in: "15m", want: 15 * time.Minute},
		{in: "24h", want: 24 * time.Hour},
		{in: "7d", want: 168 * time.Hour},
		{in: "0d", want: 0},
		{in: "106751d", want: 106751 * 24 * time.Hour},
		{in: "106752d", wantErr: `"106752d" is too long`},
		{in: "99999999999999999999d", wantErr: `"99999999999999999999d" is not a duration`},
		{in: "-5m", wantErr: `"-5m" is negative`},
		{in: "-1d", wantErr: `"-1d" is not a duration`},
		{in: "d", wantErr: `"d" is not a duration`},
		{in: "", wantErr: `"" is not a duration`},
		{in: "1w", wantErr: `"1w" is not a duration`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseDuration(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	t.Setenv("MCPE_TEST_ALICE_TOKEN", "alice-from-env")
	t.Setenv("MCPE_TEST_INGEST_TOKEN", "ingest-from-env")
	c, err := Parse(strings.NewReader(`
auth:
  tokens:
    - principal: alice
      tokenEnv: MCPE_TEST_ALICE_TOKEN
    - principal: bob
      token: bob-inline
  ingestTokens:
    - token: ingest-inline
    - tokenEnv: MCPE_TEST_INGEST_TOKEN
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}

	principals, err := c.PrincipalTokens()
	if err != nil {
		t.Fatalf("PrincipalTokens: %v", err)
	}
	wantPrincipals := map[string]string{"alice-from-env": "alice", "bob-inline": "bob"}
	if diff := cmp.Diff(wantPrincipals, principals); diff != "" {
		t.Errorf("PrincipalTokens mismatch (-want +got):\n%s", diff)
	}

	ingest, err := c.IngestTokens()
	if err != nil {
		t.Fatalf("IngestTokens: %v", err)
	}
	wantIngest := map[string]string{"ingest-inline": "ingest", "ingest-from-env": "ingest"}
	if diff := cmp.Diff(wantIngest, ingest); diff != "" {
		t.Errorf("IngestTokens mismatch (-want +got):\n%s", diff)
	}

	// The environment is read when the tokens are asked for, so a variable
	// unset after Parse is reported then, naming the key.
	t.Setenv("MCPE_TEST_ALICE_TOKEN", "")
	if _, err := c.PrincipalTokens(); err == nil || !strings.Contains(err.Error(), "auth.tokens[0].tokenEnv") {
		t.Errorf("PrincipalTokens with the variable unset: err = %v; want one naming auth.tokens[0].tokenEnv", err)
	}
	t.Setenv("MCPE_TEST_INGEST_TOKEN", "")
	if _, err := c.IngestTokens(); err == nil || !strings.Contains(err.Error(), "auth.ingestTokens[1].tokenEnv") {
		t.Errorf("IngestTokens with the variable unset: err = %v; want one naming auth.ingestTokens[1].tokenEnv", err)
	}
}

func TestTokensEmpty(t *testing.T) {
	c, err := Parse(strings.NewReader(""))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	principals, err := c.PrincipalTokens()
	if err != nil || len(principals) != 0 {
		t.Errorf("PrincipalTokens() = %v, %v; want none", principals, err)
	}
	ingest, err := c.IngestTokens()
	if err != nil || len(ingest) != 0 {
		t.Errorf("IngestTokens() = %v, %v; want none", ingest, err)
	}
}

func TestLoad(t *testing.T) {
	if _, err := Load(t.TempDir() + "/missing.yaml"); err == nil || !strings.Contains(err.Error(), "read config") {
		t.Errorf("Load of a missing file: err = %v; want a read config error", err)
	}
}
