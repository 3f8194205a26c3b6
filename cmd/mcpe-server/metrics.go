package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mcpe-server/mcpe-server/internal/app"
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
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.addr: listen on %s: %w", addr, portTaken(ctx, addr, err, "metrics.addr"))
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler)
	hs := &http.Server{
		Handler:           httpapi.Deadlines(httpapi.GuardLoopback(mux), 0, 0),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics listener stopped", "error", err)
		}
	}()
	log.Info("metrics listening", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+"/metrics")
	return func() { hs.Close() }, nil
}
