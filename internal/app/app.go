// Package app assembles mcpe-server from its configuration: the handlers
// and the runner, the subscriptions service with realtime, cron and
// scheduled delivery, the event sources and their catalog, the MCP server,
// and the HTTP endpoints. It is the one place that wires the concrete
// implementations together; cmd/mcpe-server adds the process around it
// (flags, the database file, listeners, signals) and client/clienttest runs
// the same assembly in process for client tests and examples.
package app

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters/catalog"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/delivery"
	"github.com/mcpe-server/mcpe-server/delivery/cron"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/delivery/scheduled"
	"github.com/mcpe-server/mcpe-server/handlers"
	"github.com/mcpe-server/mcpe-server/internal/config"
	"github.com/mcpe-server/mcpe-server/internal/console"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/internal/metrics"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Options configure an App.
type Options struct {
	// Config is the operator's configuration, already checked (config.Load
	// or config.Parse); nil means every default.
	Config *config.Config
	// Store keeps everything; required. The App does not close it.
	Store subscriptions.Store
	// StoreName names the store for people: its path, or its URL without
	// credentials. /healthz tells callers on this machine.
	StoreName string
	// HTTP says whether the HTTP endpoints will be served: the catalog then
	// lists POST /v1/events as set up, and configured webhook adapters
	// without it are warned about.
	HTTP bool
	// Version is the server's version in the initialize result; empty
	// means "dev".
	Version string
	// Clock drives expiry, digests, retries, backoff and event stamps; nil
	// is the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Realtime sizes what is kept in memory for live sessions (window,
	// backlog); the zero value is the realtime package's defaults. Tests
	// make them small. Its Inbox, Logger and Sent are set by New.
	Realtime realtime.Options
	// PruneInterval is how often retention is applied; zero means the
	// subscriptions package's default (a minute). A test that moves a fake
	// clock by a day sets it longer, so as not to prune once per minute
	// passed.
	PruneInterval time.Duration
	// PrivatePaths are paths no handler program may see: the database and
	// its directory, the configuration file, the data directory. The bash
	// handler's sandbox hides them (bash.Options.HiddenPaths); nil hides
	// only the server user's home.
	PrivatePaths []string
}

// App is a running mcpe-server without its listeners. Build it with New and
// Close it when done.
type App struct {
	// Service, Sessions, Server and Catalog are the server's parts.
	Service  *subscriptions.Service
	Sessions *realtime.Registry
	Server   *mcpserver.Server
	Catalog  *catalog.Catalog
	// Metrics are the Prometheus metrics; nil unless the configuration
	// turns them on (metrics.enabled or metrics.addr).
	Metrics *metrics.Metrics

	cfg      *config.Config
	opts     Options
	log      *slog.Logger
	handlers *handlerSet
	runner   *handlers.Runner
	// schedulers fire the digests of cron and scheduled subscriptions.
	schedulers delivery.Schedulers
	sources    *sources
	closed     sync.Once
	// storeID is the store's ID when it is shared (subscriptions.Shared).
	storeID string
}

// New builds the server that opts describe and starts its background work:
// expiry and digests, handler runs, and the connections to upstream MCP
// servers. On error, what was started is stopped.
func New(ctx context.Context, opts Options) (_ *App, err error) {
	if opts.Store == nil {
		return nil, errors.New("app: Options.Store is required")
	}
	cfg := cmp.Or(opts.Config, &config.Config{})
	opts.Clock = cmp.Or[clock.Clock](opts.Clock, clock.Real{})
	log := cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	a := &App{cfg: cfg, opts: opts, log: log}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if shared, ok := opts.Store.(subscriptions.Shared); ok {
		if a.storeID, err = shared.StoreID(ctx); err != nil {
			return nil, err
		}
	}

	if cfg.Metrics.On() {
		a.Metrics = metrics.New(metrics.Options{Principals: cfg.Metrics.PrincipalLabel, Clock: opts.Clock, Logger: log})
	}
	// The registry keeps the wall clock: its waits are for transports (an
	// event stream that is not open yet), which run in real time even when
	// a test moves the server's clock.
	rt := opts.Realtime
	rt.Inbox, rt.Logger = opts.Store, log
	var svc *subscriptions.Service // set before it delivers anything
	rt.Rendering = func(id string) (string, mcpe.Delivery) { return svc.Rendering(id) }
	var ran func(*subscriptions.Invocation, subscriptions.Outcome, time.Duration)
	var observer subscriptions.Observer
	if a.Metrics != nil {
		rt.Sent, ran, observer = a.Metrics.NotificationsSent, a.Metrics.HandlerRan, a.Metrics
	}
	a.Sessions = realtime.NewRegistry(&rt)
	if a.Metrics != nil {
		a.Metrics.WatchSessions(a.Sessions)
		if c, ok := opts.Store.(subscriptions.Counts); ok {
			a.Metrics.WatchStore(c)
		}
	}
	late := &lateServer{}
	if a.handlers, err = buildHandlers(&cfg.Handlers, opts.PrivatePaths, late, opts.Clock, log); err != nil {
		return nil, err
	}
	a.runner, err = handlers.New(handlers.Options{
		Jobs:        opts.Store,
		Labels:      func(id string) string { label, _ := svc.Rendering(id); return label },
		Handlers:    a.handlers.byType,
		Clock:       opts.Clock,
		Logger:      log,
		Concurrency: cfg.Handlers.Concurrency,
		RunTimeout:  time.Duration(cfg.Handlers.RunTimeout),
		Ran:         ran,
	})
	if err != nil {
		return nil, err
	}
	svc, err = subscriptions.NewService(subscriptions.ServiceOptions{
		Store:     opts.Store,
		Deliverer: a.Sessions,
		Presence:  a.Sessions,
		Backlog:   a.Sessions,
		Timings: map[mcpe.Channel]subscriptions.Timing{
			mcpe.ChannelCron:      cron.New(&cron.Options{MinEvery: time.Duration(cfg.Subscriptions.MinEvery)}),
			mcpe.ChannelScheduled: scheduled.Channel{},
		},
		Clock:            opts.Clock,
		Logger:           log,
		MaxSubscriptions: cfg.Subscriptions.MaxPerPrincipal,
		// What matching may cost grows with the subscriptions allowed.
		MaxPatternCost: max(subscriptions.DefaultMaxPatternCost, cfg.Subscriptions.MaxPerPrincipal*subscriptions.DefaultMaxPatternCost/subscriptions.DefaultMaxSubscriptions),
		Retention: subscriptions.Retention{
			InboxMaxEntries: cfg.Inbox.MaxEntries,
			InboxMaxAge:     time.Duration(cfg.Inbox.MaxAge),
			ExpiredMaxAge:   time.Duration(cfg.Inbox.MaxAge),
		},
		PruneInterval:   opts.PruneInterval,
		EphemeralPrefix: mcpserver.SessionPrincipalPrefix,
		Managed:         mcpserver.ManagedPrefixes(),
		Handlers:        a.handlers.byType,
		JobsWritten:     a.runner.Wake,
		Observer:        observer,
		RunLost: func() {
			if srv := late.srv.Load(); srv != nil {
				srv.CloseTokenlessSessions()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if err := svc.Start(ctx); err != nil {
		return nil, err
	}
	a.Service = svc
	schedOpts := &delivery.SchedulerOptions{Clock: opts.Clock, Logger: log}
	windows, _ := delivery.NewScheduler(subscriptions.Windows, svc, schedOpts) // fails only without a Firer
	for _, sch := range []*delivery.Scheduler{cron.NewScheduler(svc, schedOpts), scheduled.NewScheduler(svc, schedOpts), windows} {
		if err := sch.Start(ctx); err != nil {
			return nil, err
		}
		a.schedulers = append(a.schedulers, sch)
	}

	if a.sources, err = buildSources(&cfg.Adapters, a.publisher(svc), opts, log); err != nil {
		return nil, err
	}
	a.Catalog = a.sources.catalog
	if a.sources.served() && !opts.HTTP {
		log.Warn("webhook adapters configured but HTTP not served", "effect", "nothing can reach them", "hint", "start with --http ADDR or set http.addr")
	}
	a.Server, err = mcpserver.New(mcpserver.Options{
		Service:         svc,
		Sessions:        a.Sessions,
		Version:         opts.Version,
		Logger:          log,
		Commands:        a.handlers.commands,
		Catalog:         a.Catalog,
		Clock:           opts.Clock,
		EventsHeartbeat: time.Duration(cfg.Subscriptions.HeartbeatInterval),
		Conversation:    cfg.Conversation.Options(),
		// SEP-3415 webhook delivery, when the webhook handler is on.
		Webhooks: a.handlers.webhook,
	})
	if err != nil {
		return nil, err
	}
	late.srv.Store(a.Server)
	// Handler runs start once the server can answer sampling requests.
	if err := a.runner.Start(ctx); err != nil {
		return nil, err
	}
	if err := a.sources.start(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// HTTPHandler returns the HTTP endpoints: /mcp, /v1/events, the configured
// adapters' receivers and /healthz.
func (a *App) HTTPHandler() (http.Handler, error) {
	principalTokens, err := a.cfg.PrincipalTokens()
	if err != nil {
		return nil, err
	}
	ingestTokens, err := a.cfg.IngestTokens()
	if err != nil {
		return nil, err
	}
	var refused func(string)
	if a.Metrics != nil {
		refused = func(string) { a.Metrics.Refused("ingest") }
	}
	ingestHandler, err := httpapi.NewIngest(httpapi.IngestOptions{
		Publisher: a.publisher(a.Catalog.Publisher(a.Service))("ingest"),
		Tokens:    httpapi.NewTokens(ingestTokens),
		Clock:     a.opts.Clock,
		Logger:    a.log,
		Refused:   refused,
	})
	if err != nil {
		return nil, err
	}
	principals := httpapi.NewTokens(principalTokens)
	console, err := a.console(principals)
	if err != nil {
		return nil, err
	}
	var metricsHandler http.Handler
	if a.Metrics != nil && a.cfg.Metrics.Addr == "" {
		if metricsHandler, err = a.MetricsHandler(); err != nil {
			return nil, err
		}
	}
	return httpapi.NewMux(httpapi.MuxOptions{
		Console: console,
		MCP: a.Server.HTTPHandler(mcpserver.HTTPOptions{
			Tokens:    principals,
			Stateless: a.cfg.HTTP.Stateless,
		}),
		Ingest:         ingestHandler,
		Adapters:       a.sources.webhooks,
		SignedAdapters: a.sources.signed,
		Health:         a.health,
		StoreID:        a.storeID,
		StoreName:      a.opts.StoreName,
		Metrics:        metricsHandler,
		Off:            a.offFeatures(console == nil, metricsHandler == nil),
	}), nil
}

// offFeatures says, by path, how to turn on each feature of the HTTP
// listener that is off.
func (a *App) offFeatures(consoleOff, metricsOff bool) map[string]string {
	off := map[string]string{"/debug/pprof/": "Go's profiles are served only with --pprof ADDR, on a loopback listener of their own"}
	if consoleOff {
		how := "the web console is off; set auth.tokens (principals log in with their tokens) or console.tokenEnv (an admin token)"
		if a.cfg.Console.Disabled {
			how = "the web console is off: console.disabled is true"
		}
		off["/console"], off["/console/"] = how, how
	}
	switch {
	case !metricsOff:
	case a.cfg.Metrics.Addr != "":
		off["/metrics"] = "metrics are served on metrics.addr " + a.cfg.Metrics.Addr
	default:
		off["/metrics"] = "metrics are off; set metrics.enabled: true (or metrics.addr for a listener of their own)"
	}
	for _, name := range []string{"github", "slack", "alertmanager"} {
		if path := "/adapters/" + name; a.sources.webhooks[path] == nil && a.sources.signed[path] == nil {
			off[path] = "the " + name + " adapter is off; configure adapters." + name + " to turn it on"
		}
	}
	return off
}

// console returns the web console, or nil when it is off: turned off in the
// configuration, or with nobody to log in (no auth.tokens and no admin
// token: without tokens, each HTTP session is its own principal, which no
// browser could log in as).
func (a *App) console(principals *httpapi.Tokens) (http.Handler, error) {
	if a.cfg.Console.Disabled {
		return nil, nil
	}
	admin, err := a.cfg.ConsoleAdminToken()
	if err != nil {
		return nil, err
	}
	opts := console.Options{
		Service:    a.Service,
		AdminToken: admin,
		Sessions:   a.liveSessions,
		Cursors:    a.Sessions.Cursors,
		Clock:      a.opts.Clock,
		Logger:     a.log.With("component", "console"),
	}
	if principals.Len() > 0 {
		opts.Tokens = principals
	} else if admin == "" {
		return nil, nil
	}
	return console.New(opts)
}

// shortSessionID is the start of a session ID, for display.
func shortSessionID(id string) string {
	if len(id) <= 6 {
		return id
	}
	return id[:6] + "…"
}

// liveSessions lists the live MCP sessions for the console.
func (a *App) liveSessions() []console.LiveSession {
	var out []console.LiveSession
	for _, p := range a.Sessions.Principals() {
		for _, ss := range a.Server.SessionsOf(p) {
			// Without tokens a session ID is the credential: the console shows
			// enough of it to tell sessions apart, not to use one.
			ls := console.LiveSession{Principal: p, ID: shortSessionID(ss.ID())}
			if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
				ls.Client = strings.TrimSpace(ip.ClientInfo.Name + " " + ip.ClientInfo.Version)
			}
			out = append(out, ls)
		}
	}
	slices.SortFunc(out, func(x, y console.LiveSession) int {
		return cmp.Or(strings.Compare(x.Principal, y.Principal), strings.Compare(x.ID, y.ID))
	})
	return out
}

// MetricsHandler returns GET /metrics, behind metrics.tokens when they are
// given. It is served on the HTTP listener, or on metrics.addr when that is
// set; it fails when metrics are off.
func (a *App) MetricsHandler() (http.Handler, error) {
	if a.Metrics == nil {
		return nil, errors.New("app: metrics are off; set metrics.enabled or metrics.addr")
	}
	tokens, err := a.cfg.MetricsTokens()
	if err != nil {
		return nil, err
	}
	return a.Metrics.Handler(httpapi.NewTokens(tokens)), nil
}

// publisher returns a function giving each event source p, publishing as
// that source (its sourceEventIds are its own), counted under its name when
// metrics are on.
func (a *App) publisher(p subscriptions.Publisher) func(source string) subscriptions.Publisher {
	return func(source string) subscriptions.Publisher {
		if a.Metrics == nil {
			return subscriptions.FromSource(source, p)
		}
		return a.Metrics.Publisher(source, subscriptions.FromSource(source, p))
	}
}

// StoreID returns the ID of a store that several processes may share, or
// "" for one that only this process uses.
func (a *App) StoreID() string { return a.storeID }

// health reports whether the server can keep what it accepts: a store that
// knows (the SQLite store notices its files removed or replaced) says.
func (a *App) health() error {
	if h, ok := a.opts.Store.(interface{ Health() error }); ok {
		return h.Health()
	}
	return nil
}

// CloseSessions ends every live MCP session from the server's side, so that
// long-lived event streams return and a shutdown does not wait on them.
func (a *App) CloseSessions() {
	if a.Server == nil {
		return
	}
	a.Server.EndStreams()
	for ss := range a.Server.MCP().Sessions() {
		ss.Close()
	}
}

// Close ends the sessions and stops the background work, waiting for it.
// It is safe on a partly built App and safe to call twice. The store stays
// open.
func (a *App) Close() {
	a.closed.Do(a.close)
}

func (a *App) close() {
	a.CloseSessions()
	if a.Server != nil {
		a.Server.Close()
		a.Server.Wait()
	}
	if a.sources != nil {
		a.sources.stop()
	}
	if a.runner != nil {
		a.runner.Stop()
	}
	a.schedulers.Stop()
	if a.Service != nil {
		a.Service.Stop()
	}
	if a.handlers != nil {
		a.handlers.close()
	}
	if a.Sessions != nil {
		a.Sessions.Close()
	}
}
