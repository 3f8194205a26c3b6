package app

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/internal/config"
)

// TestOffFeaturesSayHowToTurnOn: each feature of the HTTP listener that is
// off answers 404 with the key that turns it on, not a bare 404.
func TestOffFeaturesSayHowToTurnOn(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  *config.Config
		want map[string]string // path -> part of the 404 body
	}{
		{"nothing configured", &config.Config{}, map[string]string{
			"/console":               "set auth.tokens",
			"/console/login":         "console.tokenEnv",
			"/adapters/github":       "configure adapters.github",
			"/adapters/slack":        "configure adapters.slack",
			"/adapters/alertmanager": "configure adapters.alertmanager",
			"/metrics":               "set metrics.enabled: true",
			"/debug/pprof/":          "--pprof ADDR",
		}},
		{"console disabled, metrics elsewhere", &config.Config{
			Auth:    config.Auth{Tokens: []config.PrincipalToken{{Principal: "a", Secret: config.Secret{Token: "a-token"}}}},
			Console: config.Console{Disabled: true},
			Metrics: config.Metrics{Addr: "127.0.0.1:9464"},
		}, map[string]string{
			"/console":  "console.disabled is true",
			"/metrics":  "served on metrics.addr 127.0.0.1:9464",
			"/nowhere/": "404 page not found\n",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(context.Background(), Options{Config: tt.cfg, Store: openStore(t), HTTP: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(a.Close)
			h, err := a.HTTPHandler()
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range tt.want {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost"+path, nil))
				body, _ := io.ReadAll(rec.Body)
				if rec.Code != http.StatusNotFound || !strings.Contains(string(body), want) {
					t.Errorf("GET %s = %d %q; want 404 saying %q", path, rec.Code, body, want)
				}
			}
		})
	}
}
