package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/mcpe-server/mcpe-server/internal/app"
	"github.com/mcpe-server/mcpe-server/internal/config"
)

// shutdownGrace bounds how long a clean shutdown waits for HTTP requests.
const shutdownGrace = 5 * time.Second

// serveFlags are the flags of serve.
type serveFlags struct {
	stdio                             bool
	http, db, config, logLevel, pprof string
}

// parseServeFlags parses serve's command line.
func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("mcpe-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	fs.BoolVar(&f.stdio, "stdio", false, "serve MCP on stdin/stdout")
	fs.StringVar(&f.http, "http", "", "serve HTTP on `ADDR`, e.g. 127.0.0.1:8765")
	fs.StringVar(&f.db, "db", "", "SQLite database `PATH` (\":memory:\" keeps nothing), or a postgres:// URL")
	fs.StringVar(&f.config, "config", "", "YAML configuration `FILE`")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error")
	fs.StringVar(&f.pprof, "pprof", "", "serve Go's profiles on the loopback `ADDR`, e.g. 127.0.0.1:6060")
	if err := fs.Parse(args); err != nil {
		return nil, usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return &f, nil
}

// serve runs the server until a signal arrives, or stdin closes when it
// serves stdio because --stdio asked for it, or because nothing else is
// served. A server that serves HTTP from the configuration's http.addr,
// without --stdio, keeps serving HTTP when stdin closes (or is /dev/null,
// as under a service manager).
func serve(ctx context.Context, args []string, stderr io.Writer) error {
	flags, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	cfg := &config.Config{}
	if flags.config != "" {
		if cfg, err = config.Load(flags.config); err != nil {
			return err
		}
	}
	cfg.DB = cmp.Or(flags.db, cfg.DB)
	cfg.Log.Level = cmp.Or(flags.logLevel, cfg.Log.Level)
	serveHTTP := cmp.Or(flags.http, cfg.HTTP.Addr)
	// Stdio that nobody asked for does not outlive stdin unless HTTP is
	// served.
	implicitStdio := !flags.stdio && flags.http == ""
	serveStdio := flags.stdio || implicitStdio
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
		PrivatePaths: privatePaths(cfg.DB, flags.config),
	})
	if err != nil {
		return err
	}
	defer a.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if flags.pprof != "" {
		stopPprof, err := startPprof(ctx, flags.pprof, log)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	if cfg.Metrics.Addr != "" {
		stopMetrics, err := startMetrics(ctx, cfg.Metrics.Addr, a, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	errc := make(chan error, 2)
	servingHTTP := false
	if serveHTTP != "" {
		stopHTTP, err := startHTTP(ctx, serveHTTP, cfg, a, log, errc)
		switch {
		case err == nil:
			servingHTTP = true
			defer stopHTTP()
		case !serveStdio:
			return portTaken(ctx, serveHTTP, err, "--http (or http.addr)")
		default:
			if err := portShared(ctx, serveHTTP, err, a.StoreID(), dbName); err != nil {
				return err
			}
			log.Info("HTTP port taken by another mcpe-server on the same database: serving stdio only",
				"addr", serveHTTP, "effect", "what is posted there reaches this server's sessions through the database")
		}
	}
	if serveStdio {
		go func() {
			err := a.Server.RunStdio(ctx)
			if implicitStdio && servingHTTP && ctx.Err() == nil && (err == nil || errors.Is(err, io.EOF)) {
				log.Info("standard input closed; serving HTTP until stopped (give --stdio to stop with stdin)")
				return
			}
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
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		for _, w := range exposedWarnings(cfg) {
			log.Warn(w)
		}
	}
	hs := serveOn(ctx, ln, handler, log, func(err error) { errc <- err })
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

// exposedWarnings are the warnings for an HTTP listener that other
// machines reach, with cfg: what anyone who can connect may do.
func exposedWarnings(cfg *config.Config) []string {
	var out []string
	if len(cfg.Auth.Tokens) == 0 {
		out = append(out, "HTTP is reachable from other machines and auth.tokens is empty: anyone who can connect can subscribe")
	}
	if len(cfg.Auth.IngestTokens) == 0 {
		out = append(out, "HTTP is reachable from other machines and auth.ingestTokens is empty: anyone who can connect can publish events")
	}
	if cfg.Metrics.Enabled && cfg.Metrics.Addr == "" && len(cfg.Metrics.Tokens) == 0 {
		out = append(out, "HTTP is reachable from other machines, metrics.enabled is on and metrics.tokens is empty: anyone who can connect can read /metrics")
	}
	return out
}

func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
