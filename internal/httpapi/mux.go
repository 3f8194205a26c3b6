package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// MuxOptions name the handlers to mount.
type MuxOptions struct {
	// MCP serves /mcp; required.
	MCP http.Handler
	// Ingest serves /v1/events; required.
	Ingest http.Handler
	// Health reports readiness for /healthz; nil always reports ok.
	Health func() error
	// Store identifies the database this server keeps its state in, for
	// /healthz: its ID (subscriptions.Shared), given to every caller, and
	// its name (a path or a URL without credentials), given only to callers
	// on this machine. A second server that finds its HTTP port taken reads
	// them to tell whether the first serves the same store.
	StoreID, StoreName string
	// Adapters serve webhooks from event sources, by path (such as
	// "/adapters/alertmanager").
	Adapters map[string]http.Handler
	// SignedAdapters are adapters that authenticate every request by a
	// signature made with a shared secret (GitHub, Slack). They are exempt
	// from the loopback Host check, which a tunnel to a local server
	// (whose Host header names the tunnel) would otherwise fail: a
	// DNS-rebinding page cannot sign its requests.
	SignedAdapters map[string]http.Handler
	// Console serves the web console at /console and under it; nil
	// serves none.
	Console http.Handler
	// Metrics, when set, serves GET /metrics (Prometheus).
	Metrics http.Handler
	// Off are the paths of features that are off, each with how to turn
	// it on: they answer 404 with that text instead of a bare 404.
	Off map[string]string
}

// NewMux returns the server's HTTP handler, with per-request deadlines
// (Deadlines) around every endpoint.
func NewMux(opts MuxOptions) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", opts.MCP)
	mux.Handle("/v1/events", opts.Ingest)
	for path, h := range opts.Adapters {
		mux.Handle(path, h)
	}
	if opts.Console != nil {
		mux.Handle("/console", opts.Console)
		mux.Handle("/console/", opts.Console)
	}
	if opts.Metrics != nil {
		mux.Handle("/metrics", opts.Metrics)
	}
	for path, how := range opts.Off {
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "404 page not found: "+how, http.StatusNotFound)
		})
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		status, body := http.StatusOK, map[string]string{"status": "ok"}
		if opts.Health != nil {
			if err := opts.Health(); err != nil {
				status, body = http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": err.Error()}
			}
		}
		if opts.StoreID != "" {
			body["store"] = opts.StoreID
		}
		// The database's name is given only to callers on this machine.
		caller, err := netip.ParseAddrPort(r.RemoteAddr)
		if opts.StoreName != "" && err == nil && caller.Addr().Unmap().IsLoopback() {
			body["database"] = opts.StoreName
		}
		WriteJSON(w, status, body)
	})
	guarded := GuardLoopback(http.NewCrossOriginProtection().Handler(mux))
	if len(opts.SignedAdapters) == 0 {
		return Deadlines(guarded, 0, 0)
	}
	outer := http.NewServeMux()
	outer.Handle("/", guarded)
	for path, h := range opts.SignedAdapters {
		outer.Handle(path, http.NewCrossOriginProtection().Handler(h))
	}
	return Deadlines(outer, 0, 0)
}

// GuardLoopback refuses requests that reached a loopback listener with a
// Host header naming another machine: a DNS-rebinding page in the user's
// browser would otherwise reach a local server as if it were its own origin.
func GuardLoopback(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && IsLoopbackHost(local.String()) && !IsLoopbackHost(r.Host) {
			http.Error(w, "Forbidden: this server listens on loopback and only answers requests addressed to localhost", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// IsLoopbackHost reports whether hostport (a Host header or a listen
// address) names this machine: localhost, or a loopback IP, with or without
// a port.
func IsLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.IsLoopback()
}
