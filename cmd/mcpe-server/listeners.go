package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/mcpe-server/mcpe-server/internal/app"
	"github.com/mcpe-server/mcpe-server/internal/config"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
)

// startMetrics serves GET /metrics on a listener of its own at addr
// (metrics.addr), apart from the MCP and ingest endpoints, until the
// returned function is called. On a loopback address it answers only
// requests addressed to localhost (DNS rebinding), as the MCP listener does.
func startMetrics(ctx context.Context, addr string, a *app.App, log *slog.Logger) (func(), error) {
	handler, err := a.MetricsHandler()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler)
	stop, bound, err := startSide(ctx, "metrics", "metrics.addr", addr, httpapi.Deadlines(httpapi.GuardLoopback(mux), 0, 0), log)
	if err != nil {
		return nil, err
	}
	log.Info("metrics listening", "addr", bound, "url", "http://"+bound+"/metrics")
	return stop, nil
}

// startPprof serves Go's profiles on a loopback listener of their own at
// addr, apart from the MCP and ingest endpoints, until the returned
// function is called.
func startPprof(ctx context.Context, addr string, log *slog.Logger) (func(), error) {
	if err := config.CheckLoopback(addr); err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	stop, bound, err := startSide(ctx, "pprof", "--pprof", addr, mux, log)
	if err != nil {
		return nil, err
	}
	log.Info("pprof listening", "addr", bound, "profiles", "http://"+bound+"/debug/pprof/")
	return stop, nil
}

// startSide serves handler on a listener of its own at addr, which setting
// gave, until the returned function is called; name is the listener's in
// logs. It also returns the address it listens on.
func startSide(ctx context.Context, name, setting, addr string, handler http.Handler, log *slog.Logger) (func(), string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("%s: listen on %s: %w", setting, addr, portTaken(ctx, addr, err, setting))
	}
	hs := serveOn(ctx, ln, handler, log, func(err error) { log.Warn(name+" listener stopped", "error", err) })
	return func() { hs.Close() }, ln.Addr().String(), nil
}

// serveOn serves handler on ln until the returned server is shut down:
// requests outlive ctx (a clean shutdown lets them finish), the server's own
// errors are logged as warnings, and stopped gets the error that stops it,
// if it is not being closed.
func serveOn(ctx context.Context, ln net.Listener, handler http.Handler, log *slog.Logger, stopped func(error)) *http.Server {
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
			stopped(err)
		}
	}()
	return hs
}
