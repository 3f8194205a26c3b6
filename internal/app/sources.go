package app

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/mcpe-server/mcpe-server/adapters/alertmanager"
	"github.com/mcpe-server/mcpe-server/adapters/catalog"
	"github.com/mcpe-server/mcpe-server/adapters/github"
	mcpadapter "github.com/mcpe-server/mcpe-server/adapters/mcp"
	"github.com/mcpe-server/mcpe-server/adapters/slack"
	"github.com/mcpe-server/mcpe-server/internal/config"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
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

// buildSources builds the adapters of cfg. Each publishes through
// pubFor(its source name), the same path as POST /v1/events, served when
// o.HTTP; the catalog keeps the types posted there in o.Store.
func buildSources(cfg *config.Adapters, pubFor func(source string) subscriptions.Publisher, o Options, log *slog.Logger) (*sources, error) {
	s := &sources{webhooks: map[string]http.Handler{}, signed: map[string]http.Handler{}}
	list := []catalog.Source{{
		Name:        "ingest",
		Description: "Events posted by scripts, CI jobs and services to POST /v1/events (or with `mcpe-server publish`): any type; the types posted lately are listed under seenRecently.",
		Endpoint:    "/v1/events",
		Configured:  o.HTTP,
	}, {
		Name:        "conversation",
		Description: "The user's messages, which a host that supports conversation events sends to the server.",
		Configured:  true,
		Types: func() []mcpe.EventType {
			return []mcpe.EventType{{Type: mcpserver.UserMessageType, Description: "A user message (data.messageId, data.content); only its sender's subscriptions receive it.",
				DataSchema: []byte(`{"type":"object","properties":{"messageId":{"type":"string"},"content":{"type":"string"}},"required":["messageId","content"]}`)}}
		},
	}}

	gh := catalog.Source{
		Name:        "github",
		Description: "GitHub repository and organization webhooks: github.<event>.<action> (github.issues.opened, github.pull_request.closed, github.workflow_run.completed, ...) or github.<event> (github.push), priority from labels and failed runs.",
		Endpoint:    github.Endpoint,
	}
	if c := cfg.GitHub; c != nil {
		opts, err := c.Options()
		if err != nil {
			return nil, config.Within("adapters.github", err)
		}
		opts.Publisher, opts.Clock, opts.Logger = pubFor("github"), o.Clock, log.With("adapter", "github")
		a, err := github.New(opts)
		if err != nil {
			return nil, config.Within("adapters.github", err)
		}
		s.signed[github.Endpoint] = a
		gh.Configured, gh.Types, gh.Values = true, a.Catalog, github.Placeholders
	}
	list = append(list, gh)

	sl := catalog.Source{
		Name:        "slack",
		Description: "Slack Events API: slack.<event.type> (slack.message, slack.app_mention, slack.reaction_added, ...), a message with a subtype as slack.message.<subtype>; high priority for mentions and direct messages.",
		Endpoint:    slack.Endpoint,
	}
	if c := cfg.Slack; c != nil {
		opts, err := c.Options()
		if err != nil {
			return nil, config.Within("adapters.slack", err)
		}
		opts.Publisher, opts.Clock, opts.Logger = pubFor("slack"), o.Clock, log.With("adapter", "slack")
		a, err := slack.New(opts)
		if err != nil {
			return nil, config.Within("adapters.slack", err)
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
		opts, err := c.Options()
		if err != nil {
			return nil, config.Within("adapters.alertmanager", err)
		}
		opts.Publisher, opts.Clock, opts.Logger = pubFor("alertmanager"), o.Clock, log.With("adapter", "alertmanager")
		a, err := alertmanager.New(opts)
		if err != nil {
			return nil, config.Within("adapters.alertmanager", err)
		}
		// With tokens every request is authenticated, so the receiver may
		// be reached through a tunnel or a proxy like the signed ones;
		// without, it stays behind the loopback Host check.
		if opts.Tokens.Len() > 0 {
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
		opts := c.Options()
		opts.Publisher, opts.Clock, opts.Logger = pubFor(mcpadapter.SourceName), o.Clock, log.With("adapter", "mcp")
		a, err := mcpadapter.New(opts)
		if err != nil {
			return nil, config.Within("adapters.mcp", err)
		}
		s.upstreams = a
		up.Configured, up.Types, up.States = true, a.Catalog, a.States
	}
	list = append(list, up)

	kept, _ := o.Store.(subscriptions.TypeStore)
	s.catalog = catalog.New(catalog.Options{Sources: list, Store: kept, Clock: o.Clock, Logger: log})
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
