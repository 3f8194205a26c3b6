package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/handlers/agent"
	"github.com/mcpe-server/mcpe-server/handlers/bash"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/internal/config"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// handlerSet is the handlers the configuration turns on.
type handlerSet struct {
	byType map[mcpe.HandlerType]subscriptions.Handler
	// commands are the bash handler's allowed command names.
	commands []string
	// webhook is the webhook handler's sender, which also serves SEP-3415
	// webhook subscriptions; nil when webhooks are off.
	webhook *webhook.Sender
}

func (h *handlerSet) close() {
	if h.webhook != nil {
		h.webhook.Close()
	}
}

// buildHandlers makes the handlers cfg turns on, on clock clk; the bash
// handler's programs may not see private (Options.PrivatePaths). late
// supplies what the agent handler needs from the MCP server, which is built
// after them.
func buildHandlers(cfg *config.Handlers, private []string, late *lateServer, clk clock.Clock, log *slog.Logger) (*handlerSet, error) {
	set := &handlerSet{byType: make(map[mcpe.HandlerType]subscriptions.Handler)}
	if b := cfg.Bash; b != nil && len(b.Commands) > 0 {
		opts := cfg.BashOptions()
		opts.Clock, opts.Logger, opts.HiddenPaths = clk, log.With("handler", "bash"), private
		runner, err := bash.New(&opts)
		if err != nil {
			return nil, config.Within("handlers.bash", err)
		}
		set.byType[mcpe.HandlerBash] = runner
		set.commands = runner.Commands()
		if runner.Sandboxed() {
			log.Info("bash handler on", "commands", set.commands, "sandbox", "bubblewrap")
		} else {
			log.Warn("bash handler on without a sandbox", "commands", set.commands, "effect", "allowed programs run with the server's file and network access", "hint", "install bubblewrap to confine them")
		}
	}
	if w := cfg.Webhook; w != nil && w.Enabled {
		opts, err := w.Options()
		if err != nil {
			return nil, config.Within("handlers.webhook", err)
		}
		opts.Clock, opts.Logger = clk, log.With("handler", "webhook")
		sender, err := webhook.New(&opts)
		if err != nil {
			return nil, config.Within("handlers.webhook", err)
		}
		// SEP-3415 webhook subscriptions' jobs are delivered as the SEP
		// says; the others as MCPE webhook handlers.
		set.byType[mcpe.HandlerWebhook] = mcpserver.WebhookHandler(sender, clk, log.With("handler", "webhook"))
		set.webhook = sender
		log.Info("webhook handler on", "allow_http", w.AllowHTTP, "allow_networks", w.AllowNetworks, "verified_urls", len(w.VerifiedURLs))
	}
	if a := cfg.Agent; a != nil && a.Enabled {
		opts, err := a.Options()
		if err != nil {
			return nil, config.Within("handlers.agent", err)
		}
		opts.Sessions, opts.Tools = late.Sessions, late
		opts.Clock, opts.Logger = clk, log.With("handler", "agent")
		ag, err := agent.New(&opts)
		if err != nil {
			return nil, config.Within("handlers.agent", err)
		}
		set.byType[mcpe.HandlerAgent] = ag
		log.Info("agent handler on", "endpoint", a.URL != "")
	}
	return set, nil
}

// lateServer hands the agent handler the MCP server's sessions and tools;
// the server is built after the handlers, and set here once it is.
type lateServer struct {
	srv atomic.Pointer[mcpserver.Server]
}

// Sessions returns the live sessions of principal.
func (l *lateServer) Sessions(principal string) []*mcp.ServerSession {
	if s := l.srv.Load(); s != nil {
		return s.SessionsOf(principal)
	}
	return nil
}

// Tools returns the server's tools.
func (l *lateServer) Tools() []*mcp.Tool {
	if s := l.srv.Load(); s != nil {
		return s.Tools().Tools()
	}
	return nil
}

// CallTool calls one of the server's tools for principal.
func (l *lateServer) CallTool(ctx context.Context, principal, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	s := l.srv.Load()
	if s == nil {
		return nil, errors.New("the server is not ready")
	}
	return s.Tools().CallTool(ctx, principal, name, args)
}
