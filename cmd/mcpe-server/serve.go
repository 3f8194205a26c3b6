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

	"github.com/mcpe-server/mcpe-server/internal/app"
	"github.com/mcpe-server/mcpe-server/internal/config"
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
	dbPath := fs.String("db", "", "SQLite database `PATH` (\":memory:\" keeps nothing), or a postgres:// URL")
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
	store, dbName, err := openStore(ctx, cfg.DB)
	if err != nil {
		return err
	}
	defer store.Close()
	log.Info("database opened", "path", dbName)

	a, err := app.New(ctx, app.Options{
		Config:    cfg,
		Store:     store,
		StoreName: dbName,
		HTTP:      serveHTTP != "",
		Version:   version(),
		Logger:    log,
		// The bash handler's sandbox hides them from the programs it runs.
		PrivatePaths: privatePaths(cfg.DB, *cfgPath),
	})
	if err != nil {
		return err
	}
	defer a.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	if serveHTTP != "" {
		stopHTTP, err := startHTTP(ctx, serveHTTP, cfg, a, log, errc)
		switch {
		case err == nil:
			defer stopHTTP()
		case !serveStdio:
			return err
		default:
			if err := portShared(ctx, serveHTTP, err, a.StoreID(), dbName); err != nil {
				return err
			}
			log.Info("HTTP port taken by another mcpe-server on the same database: serving stdio only; what is posted there reaches this server's sessions through the database",
				"addr", serveHTTP)
		}
	}
	if serveStdio {
		go func() {
			err := a.Server.RunStdio(ctx)
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
func startHTTP(ctx context.Context, addr string, cfg *config.Config, a *app.App, log *slog.Logger, errc chan<- error) (func(), error) {
	handler, err := a.HTTPHandler()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if !isLoopbackAddr(ln.Addr()) {
		if len(cfg.Auth.Tokens) == 0 {
			log.Warn("HTTP is reachable from other machines and auth.tokens is empty: anyone who can connect can subscribe")
		}
		if len(cfg.Ingest.Tokens) == 0 {
			log.Warn("HTTP is reachable from other machines and ingest.tokens is empty: anyone who can connect can publish events")
		}
	}
	hs := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Bodies and answers have per-request deadlines (httpapi.Deadlines);
		// an event stream has none, so no server-wide Read or WriteTimeout.
		IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	log.Info("HTTP server listening", "addr", ln.Addr().String(), "mcp", "http://"+ln.Addr().String()+"/mcp", "ingest", "http://"+ln.Addr().String()+"/v1/events")
	return func() {
		a.CloseSessions()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			hs.Close()
		}
	}, nil
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
