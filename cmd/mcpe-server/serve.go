package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mcpe-server/mcpe-server/bearer"
	"github.com/mcpe-server/mcpe-server/config"
	"github.com/mcpe-server/mcpe-server/delivery/cron"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/delivery/scheduled"
	"github.com/mcpe-server/mcpe-server/handlers"
	"github.com/mcpe-server/mcpe-server/httpapi"
	"github.com/mcpe-server/mcpe-server/ingest"
	"github.com/mcpe-server/mcpe-server/server"
	"github.com/mcpe-server/mcpe-server/sessions"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// shutdownGrace bounds how long a clean shutdown waits for HTTP requests.
const shutdownGrace = 5 * time.Second

// serve runs the server until stdin closes (stdio), or a signal arrives.
func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpe-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	stdio := fs.Bool("stdio", false, "serve MCP on stdin/stdout")
	httpAddr := fs.String("http", "", "serve HTTP on `ADDR`, e.g. 127.0.0.1:8765")
	dbPath := fs.String("db", "", "SQLite database `PATH` (\":memory:\" keeps nothing)")
	cfgPath := fs.String("config", "", "YAML configuration `FILE`")
	logLevel := fs.String("log-level", "", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}

	cfg := &config.Config{}
	if *cfgPath != "" {
		var err error
		if cfg, err = config.Load(*cfgPath); err != nil {
			return err
		}
	}
	if *dbPath != "" {
		cfg.DB = *dbPath
	}
	if *logLevel != "" {
		cfg.Log.Level = *logLevel
	}
	serveHTTP := cfg.HTTP.Addr
	serveStdio := *stdio
	switch {
	case *httpAddr != "":
		serveHTTP = *httpAddr
	case !*stdio:
		serveStdio = true
	}
	level, err := config.ParseLevel(cfg.Log.Level)
	if err != nil {
		return usageError{err}
	}
	log := newLogger(stderr, level, cfg.Log.Format)

	if cfg.DB == "" {
		if cfg.DB, err = defaultDBPath(); err != nil {
			return err
		}
	}
	store, err := sqlite.Open(ctx, cfg.DB)
	if err != nil {
		return err
	}
	defer store.Close()
	log.Info("database opened", "path", cfg.DB)

	registry := sessions.New(&sessions.Options{Logger: log})
	defer registry.Close()
	late := &lateServer{}
	hs, err := buildHandlers(&cfg.Handlers, late, log)
	if err != nil {
		return err
	}
	defer hs.close()
	runner, err := handlers.New(handlers.Options{
		Jobs:        store,
		Handlers:    hs.byType,
		Logger:      log,
		Concurrency: cfg.Handlers.Concurrency,
	})
	if err != nil {
		return err
	}
	retention := subscriptions.Retention{
		InboxMaxEntries: cfg.Inbox.MaxEntries,
		InboxMaxAge:     time.Duration(cfg.Inbox.MaxAge),
		DedupWindow:     time.Duration(cfg.Inbox.DedupWindow),
		ExpiredMaxAge:   time.Duration(cfg.Inbox.ExpiredMaxAge),
	}
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{
		Store:     store,
		Deliverer: realtime.New(registry),
		Presence:  registry,
		Timings: map[subscriptions.Channel]subscriptions.Timing{
			subscriptions.ChannelCron:      cron.New(&cron.Options{MinEvery: time.Duration(cfg.Delivery.MinEvery)}),
			subscriptions.ChannelScheduled: scheduled.Channel{},
		},
		PendingLimit:     cfg.Delivery.PendingDigests,
		Logger:           log,
		MaxSubscriptions: cfg.Subscriptions.MaxPerPrincipal,
		Retention:        retention,
		EphemeralPrefix:  server.SessionPrincipalPrefix,
		Handlers:         hs.byType,
		SecretGrace:      secretGrace(cfg),
		JobsWritten:      runner.Wake,
	})
	if err != nil {
		return err
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	defer svc.Stop()

	src, err := buildSources(&cfg.Adapters, svc, serveHTTP != "", log)
	if err != nil {
		return err
	}
	if src.served() && serveHTTP == "" {
		log.Warn("webhook adapters are configured but HTTP is not served, so nothing can reach them; start with --http ADDR or set http.addr")
	}

	srv, err := server.New(server.Options{
		Service:  svc,
		Sessions: registry,
		Version:  version(),
		Logger:   log,
		Commands: hs.commands,
		Catalog:  src.catalog,
	})
	if err != nil {
		return err
	}
	late.set(srv)
	// Handler runs start once the server can answer sampling requests.
	if err := runner.Start(ctx); err != nil {
		return err
	}
	defer runner.Stop()
	if err := src.start(ctx); err != nil {
		return err
	}
	defer src.stop()
	defer srv.Wait()
	defer closeSessions(srv)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	if serveHTTP != "" {
		stopHTTP, err := startHTTP(ctx, serveHTTP, cfg, src, svc, srv, log, errc)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	if serveStdio {
		go func() {
			err := srv.RunStdio(ctx)
			log.Info("stdio client disconnected")
			errc <- err
		}()
	}
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		return nil
	case err := <-errc:
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	}
}

// startHTTP listens on addr and serves the HTTP endpoints. The returned
// function stops the server.
func startHTTP(ctx context.Context, addr string, cfg *config.Config, src *sources, svc *subscriptions.Service, srv *server.Server, log *slog.Logger, errc chan<- error) (func(), error) {
	principalTokens, err := cfg.PrincipalTokens()
	if err != nil {
		return nil, err
	}
	ingestTokens, err := cfg.IngestTokens()
	if err != nil {
		return nil, err
	}
	ingestHandler, err := ingest.NewHandler(ingest.Options{
		Publisher:    src.catalog.Publisher(svc),
		MaxBodyBytes: cfg.Ingest.MaxBodyBytes,
		Tokens:       bearer.NewSet(ingestTokens),
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	handler := httpapi.NewMux(httpapi.Options{
		MCP: srv.HTTPHandler(server.HTTPOptions{
			Tokens:         bearer.NewSet(principalTokens),
			SessionTimeout: time.Duration(cfg.HTTP.SessionTimeout),
		}),
		Ingest:         ingestHandler,
		Adapters:       src.webhooks,
		SignedAdapters: src.signed,
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if !isLoopbackAddr(ln.Addr()) {
		if len(principalTokens) == 0 {
			log.Warn("HTTP is reachable from other machines and auth.tokens is empty: anyone who can connect can subscribe")
		}
		if len(ingestTokens) == 0 {
			log.Warn("HTTP is reachable from other machines and ingest.tokens is empty: anyone who can connect can publish events")
		}
	}
	hs := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	log.Info("HTTP server listening", "addr", ln.Addr().String(), "mcp", "http://"+ln.Addr().String()+"/mcp", "ingest", "http://"+ln.Addr().String()+"/v1/events")
	return func() {
		closeSessions(srv)
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			hs.Close()
		}
	}, nil
}

// secretGrace is how long a rotated webhook secret keeps signing.
func secretGrace(cfg *config.Config) time.Duration {
	if w := cfg.Handlers.Webhook; w != nil {
		return time.Duration(w.SecretGrace)
	}
	return 0
}

// closeSessions ends every MCP session, so that long-lived event streams
// return and a shutdown does not wait on them.
func closeSessions(srv *server.Server) {
	for ss := range srv.MCP().Sessions() {
		ss.Close()
	}
}

func isLoopbackAddr(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
