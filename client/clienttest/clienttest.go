// Package clienttest runs a complete mcpe-server in process, for the tests
// and examples of MCPE clients: the SQLite store in memory, realtime, cron
// and scheduled delivery, the events catalog, optionally the bash handler,
// Streamable HTTP (MCP at /mcp, ingest at /v1/events) on a loopback port, and
// in-memory MCP transports bound to a principal. It is the assembly
// cmd/mcpe-server runs (internal/app), with an in-memory database.
package clienttest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/internal/app"
	"github.com/mcpe-server/mcpe-server/internal/config"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// Options configure a Server. A nil *Options means all defaults.
type Options struct {
	// Clock drives expiry and digests; nil is the wall clock. A
	// *clocktest.Fake lets a test fire a "0 9 * * *" digest at once.
	Clock clock.Clock
	// Tokens map MCP bearer tokens to principals. Empty: every HTTP
	// session is its own principal, whose subscriptions end with it.
	Tokens map[string]string
	// Commands are the programs the bash handler may run, by name, with
	// absolute paths. Empty: no bash handler.
	Commands map[string]string
	// WindowEntries is how many deliveries of a principal the server keeps
	// in memory for its live sessions; zero is the server's default. A
	// session behind them catches up from the inbox.
	WindowEntries int
	// MaxBacklog sets what a live session may be owed (realtime.Options);
	// zero is the server's default.
	MaxBacklog int64
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Stateless turns the server's http.stateless on: protocol 2026-07-28
	// over Streamable HTTP, for a client that asks for it. It needs Tokens.
	Stateless bool
}

// Server is a running in-process mcpe-server. Close it when done.
type Server struct {
	// URL is the HTTP base URL, such as "http://127.0.0.1:40123".
	URL string
	// MCPEndpoint is URL + "/mcp", for mcp.StreamableClientTransport.
	MCPEndpoint string

	// Service, Sessions and MCP are the server's parts, for tests that
	// reach inside.
	Service  *subscriptions.Service
	Sessions *realtime.Registry
	MCP      *mcpserver.Server

	clock clock.Clock
	store *sqlite.Store
	app   *app.App
	http  *httptest.Server
}

// Start starts a server.
func Start(ctx context.Context, opts *Options) (s *Server, err error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Clock = cmp.Or[clock.Clock](o.Clock, clock.Real{})
	cfg := &config.Config{Inbox: config.Inbox{MaxEntries: 100000}}
	cfg.HTTP.Stateless = o.Stateless
	for token, principal := range o.Tokens {
		cfg.Auth.Tokens = append(cfg.Auth.Tokens, config.PrincipalToken{Principal: principal, Secret: config.Secret{Token: token}})
	}
	if len(o.Commands) > 0 {
		cfg.Handlers.Bash = &config.BashHandler{Commands: map[string]config.BashCommand{}, Sandbox: "off"}
		for name, path := range o.Commands {
			cfg.Handlers.Bash.Commands[name] = config.BashCommand{Path: path}
		}
	}
	s = &Server{clock: o.Clock}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.store, err = sqlite.Open(ctx, sqlite.Memory); err != nil {
		return nil, err
	}
	s.app, err = app.New(ctx, app.Options{
		Config:   cfg,
		Store:    s.store,
		HTTP:     true,
		Clock:    o.Clock,
		Logger:   o.Logger,
		Realtime: realtime.Options{WindowEntries: o.WindowEntries, BacklogEntries: o.MaxBacklog},
		// A test that moves its fake clock by a day would otherwise prune
		// once for every minute passed.
		PruneInterval: 24 * time.Hour,
	})
	if err != nil {
		return nil, err
	}
	s.Service, s.Sessions, s.MCP = s.app.Service, s.app.Sessions, s.app.Server
	handler, err := s.app.HTTPHandler()
	if err != nil {
		return nil, err
	}
	s.http = httptest.NewServer(handler)
	s.URL = s.http.URL
	s.MCPEndpoint = s.URL + "/mcp"
	return s, nil
}

// Transport connects a new in-memory session acting for principal and
// returns the client's end. Each call makes a fresh one, so it can serve as
// a client's reconnection function.
func (s *Server) Transport(ctx context.Context, principal string) (mcp.Transport, error) {
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.MCP.Connect(ctx, st, principal); err != nil {
		return nil, err
	}
	return ct, nil
}

// Publish publishes an event, as POST /v1/events does, and returns its ID.
func (s *Server) Publish(ctx context.Context, in mcpe.EventInput) (string, error) {
	ev, err := subscriptions.EventFromInput(in, s.clock.Now())
	if err != nil {
		return "", err
	}
	res, err := s.app.Catalog.Publisher(s.Service).Publish(ctx, ev)
	if err != nil {
		return "", err
	}
	return res.EventID, nil
}

// Post sends an event to POST /v1/events over HTTP and returns its ID.
func (s *Server) Post(ctx context.Context, in mcpe.EventInput) (string, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/events", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Client().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("POST /v1/events: %s: %s", resp.Status, b)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("POST /v1/events: decode %s: %w", b, err)
	}
	return out.ID, nil
}

// CloseSessions ends every live MCP session from the server's side, as a
// restart or a network failure would: clients see their session end.
func (s *Server) CloseSessions() { s.app.CloseSessions() }

// CloseConnections drops every HTTP connection without ending the MCP
// sessions, as a flaky network would.
func (s *Server) CloseConnections() { s.http.CloseClientConnections() }

// Close stops the server, in the order cmd/mcpe-server does. It is safe to
// call on a partly started Server.
func (s *Server) Close() {
	if s.app != nil {
		s.app.CloseSessions()
	}
	if s.http != nil {
		s.http.Close()
	}
	if s.app != nil {
		s.app.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
}
