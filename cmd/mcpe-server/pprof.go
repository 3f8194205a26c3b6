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

	"github.com/mcpe-server/mcpe-server/internal/config"
)

// startPprof serves Go's profiles on a loopback listener of their own at
// addr, apart from the MCP and ingest endpoints, until the returned
// function is called.
func startPprof(ctx context.Context, addr string, log *slog.Logger) (func(), error) {
	if err := config.CheckLoopback(addr); err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: listen on %s: %w", addr, portTaken(ctx, addr, err, "--pprof"))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof listener stopped", "error", err)
		}
	}()
	log.Info("pprof listening", "addr", ln.Addr().String(), "profiles", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() { hs.Close() }, nil
}
