package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters/alertmanager"
	"github.com/mcpe-server/mcpe-server/adapters/catalog"
	"github.com/mcpe-server/mcpe-server/adapters/github"
	mcpadapter "github.com/mcpe-server/mcpe-server/adapters/mcp"
	"github.com/mcpe-server/mcpe-server/adapters/slack"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/internal/config"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// sources are the event sources the configuration turns on, and the catalog
// that lists them (configured or not) for the model.
type sources struct {
	// webhooks are the receivers served over HTTP, by path, behind the
	// loopback Host check; signed authenticate each request by an HMAC
	// signature and may be reached through a tunnel.
	webhooks, signed map[string]http.Handler
	// upstreams listens to upstream MCP servers; nil when none is
	// configured.
	upstreams *mcpadapter.Adapter
	catalog   *catalog.Catalog
}

// buildSources builds the adapters of cfg. Each publishes through pub, the
// same path as POST /v1/events; httpServed says whether that endpoint is.
func buildSources(cfg *config.Adapters, pub subscriptions.Publisher, httpServed bool, clk clock.Clock, log *slog.Logger) (*sources, error) {
	s := &sources{webhooks: map[string]http.Handler{}, signed: map[string]http.Handler{}}
	list := []catalog.Source{{
		Name:        "ingest",
		Description: "Events posted by scripts, CI jobs and services to POST /v1/events (or with `mcpe-server publish`): any type; the types posted lately are listed under seenRecently.",
		Endpoint:    "/v1/events",
		Configured:  httpServed,
	}}

	gh := catalog.Source{
		Name:        "github",
		Description: "GitHub repository and organization webhooks: github.<event>.<action> (github.issues.opened, github.pull_request.closed, github.workflow_run.completed, ...) or github.<event> (github.push), priority from labels and failed runs.",
		Endpoint:    github.Endpoint,
	}
	if c := cfg.GitHub; c != nil {
		secret, err := c.Secret.Value("adapters.github.secret")
		if err != nil {
			return nil, err
		}
		a, err := github.New(github.Options{
			Publisher:      pub,
			Secret:         []byte(secret),
			PriorityLabels: config.Priorities(c.PriorityLabels),
			MaxBodyBytes:   c.MaxBodyBytes,
			Clock:          clk,
			Logger:         log.With("adapter", "github"),
		})
		if err != nil {
			return nil, fmt.Errorf("adapters.github: %w", err)
		}
		s.signed[github.Endpoint] = a
		gh.Configured, gh.Types = true, a.Catalog
	}
	list = append(list, gh)

	sl := catalog.Source{
		Name:        "slack",
		Description: "Slack Events API: slack.<event.type> (slack.message, slack.app_mention, slack.reaction_added, ...), a message with a subtype as slack.message.<subtype>; high priority for mentions and direct messages.",
		Endpoint:    slack.Endpoint,
	}
	if c := cfg.Slack; c != nil {
		secret, err := c.SigningSecret.Value("adapters.slack.signingSecret")
		if err != nil {
			return nil, err
		}
		a, err := slack.New(slack.Options{
			Publisher:     pub,
			SigningSecret: []byte(secret),
			MaxBodyBytes:  c.MaxBodyBytes,
			Clock:         clk,
			Logger:        log.With("adapter", "slack"),
		})
		if err != nil {
			return nil, fmt.Errorf("adapters.slack: %w", err)
		}
		s.signed[slack.Endpoint] = a
		sl.Configured, sl.Types = true, a.Catalog
	}
	list = append(list, sl)

	am := catalog.Source{
		Name:        "alertmanager",
		Description: "Prometheus Alertmanager notifications: one alert.<alertname>.<status> event per alert, priority from the severity label.",
		Endpoint:    alertmanager.Endpoint,
	}
	if c := cfg.Alertmanager; c != nil {
		tokens := map[string]string{}
		for i, t := range c.Tokens {
			v, err := t.Value(fmt.Sprintf("adapters.alertmanager.tokens[%d]", i))
			if err != nil {
				return nil, err
			}
			tokens[v] = "alertmanager"
		}
		a, err := alertmanager.New(alertmanager.Options{
			Publisher:          pub,
			Tokens:             httpapi.NewTokens(tokens),
			SeverityPriorities: config.Priorities(c.SeverityPriorities),
			MaxBodyBytes:       c.MaxBodyBytes,
			Clock:              clk,
			Logger:             log.With("adapter", "alertmanager"),
		})
		if err != nil {
			return nil, fmt.Errorf("adapters.alertmanager: %w", err)
		}
		// With tokens every request is authenticated, so the receiver may
		// be reached through a tunnel or a proxy like the signed ones;
		// without, it stays behind the loopback Host check.
		if len(tokens) > 0 {
			s.signed[alertmanager.Endpoint] = a
		} else {
			s.webhooks[alertmanager.Endpoint] = a
		}
		am.Configured, am.Types = true, a.Catalog
	}
	list = append(list, am)

	up := catalog.Source{
		Name:        mcpadapter.SourceName,
		Description: "Upstream MCP servers: their list changes, resource updates, log messages and own events/event, as mcp.<name>.* events.",
	}
	if c := cfg.MCP; c != nil && len(c.Upstreams) > 0 {
		ups := make([]mcpadapter.Upstream, 0, len(c.Upstreams))
		for _, u := range c.Upstreams {
			ups = append(ups, mcpadapter.Upstream{
				Name:            u.Name,
				Command:         u.Command,
				Env:             config.Expanded(u.Env),
				URL:             u.URL,
				Headers:         config.Expanded(u.Headers),
				ProtocolVersion: u.ProtocolVersion,
			})
		}
		a, err := mcpadapter.New(mcpadapter.Options{
			Upstreams:  ups,
			Publisher:  pub,
			Clock:      clk,
			Logger:     log.With("adapter", "mcp"),
			LogLevel:   c.LogLevel,
			MinBackoff: time.Duration(c.MinBackoff),
			MaxBackoff: time.Duration(c.MaxBackoff),
		})
		if err != nil {
			return nil, fmt.Errorf("adapters.mcp: %w", err)
		}
		s.upstreams = a
		up.Configured, up.Types, up.States = true, a.Catalog, a.States
	}
	list = append(list, up)

	s.catalog = catalog.New(catalog.Options{Sources: list, Clock: clk})
	return s, nil
}

// start connects to the upstream MCP servers, if any.
func (s *sources) start(ctx context.Context) error {
	if s.upstreams == nil {
		return nil
	}
	return s.upstreams.Start(ctx)
}

// stop disconnects from the upstream MCP servers and waits for their work
// to end.
func (s *sources) stop() {
	if s.upstreams != nil {
		s.upstreams.Stop()
	}
}

// served reports whether any adapter needs the HTTP listener.
func (s *sources) served() bool { return len(s.webhooks)+len(s.signed) > 0 }
