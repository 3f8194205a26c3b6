package main

import (
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/internal/config"
)

// TestExposedWarnings checks the warnings for an HTTP listener other
// machines reach, among them /metrics without metrics.tokens.
func TestExposedWarnings(t *testing.T) {
	auth := config.Auth{Tokens: []config.PrincipalToken{{Principal: "a", Secret: config.Secret{Token: "x"}}}, IngestTokens: []config.Secret{{Token: "y"}}}
	for _, tc := range []struct {
		name string
		cfg  config.Config
		want []string
	}{
		{"nothing set", config.Config{}, []string{"auth.tokens is empty", "auth.ingestTokens is empty"}},
		{"tokens set", config.Config{Auth: auth}, nil},
		{"metrics without tokens", config.Config{Auth: auth, Metrics: config.Metrics{Enabled: true}}, []string{"metrics.tokens is empty"}},
		{"metrics with tokens", config.Config{Auth: auth, Metrics: config.Metrics{Enabled: true, Tokens: []config.Secret{{Token: "z"}}}}, nil},
		{"metrics on a listener of their own", config.Config{Auth: auth, Metrics: config.Metrics{Enabled: true, Addr: "127.0.0.1:9464"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := exposedWarnings(&tc.cfg)
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q; want %d of them, with %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d = %q; want it to name %q", i, got[i], w)
				}
			}
		})
	}
}
