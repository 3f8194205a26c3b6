package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/internal/stdio"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/tools"
)

// GCPercent is the garbage collector target (GOGC) that a process serving
// MCP should run with; cmd/mcpe-server sets it unless GOGC is set. The
// go-sdk allocates a fresh 32 KiB buffer for each JSON value it decodes,
// several per request, while the server's own live heap is small (SQLite
// keeps its pages outside the Go heap). With Go's default of 100 the
// collector then runs every few dozen requests, and an events_subscribe
// call costs about 1.5 times the CPU it costs at 400 (BenchmarkSubscribe).
// The heap stays a few times the live data either way.
const GCPercent = 400

// MemoryLimit is the soft memory limit (GOMEMLIMIT) a process serving MCP
// runs with unless GOMEMLIMIT is set: past it the collector works harder
// instead of letting GCPercent grow the heap, so that bursts (a page of
// large events, many sessions at once) do not leave the process holding
// gigabytes. It is soft: a live heap above it is kept, at the price of
// more collection.
const MemoryLimit = 1 << 30

// LocalPrincipal owns the subscriptions of stdio sessions. A host that
// restarts the server on stdio finds them again.
const LocalPrincipal = "local"

// SessionPrincipalPrefix starts the principal of an HTTP session when no
// bearer tokens are configured: each session is then its own principal,
// named after the server's run (Service.RunPrefix), and what it owns is
// deleted when it ends, when the server stops, or by another server on the
// same store once this one's run lapsed.
const SessionPrincipalPrefix = "session:"

// Service is what the server needs from the subscriptions domain.
type Service interface {
	tools.Service
	EventService
	ForgetPrincipal(ctx context.Context, principal string) error
	// NewPosition starts a session's own place in principal's inbox, which
	// its events_poll calls go on from.
	NewPosition(ctx context.Context, principal string) (*subscriptions.Position, error)
	// RunPrefix starts the principals of this run's sessions without a
	// token (SessionPrincipalPrefix, the run, a colon); "" when the
	// service deletes none, and then they start with
	// SessionPrincipalPrefix alone.
	RunPrefix() string
}

// Options configure a Server.
type Options struct {
	// Service is required.
	Service Service
	// Sessions receives every live session; required.
	Sessions *realtime.Registry
	// Version identifies the server in the initialize result.
	Version string
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Commands are the bash handler's allowed commands, listed in the tool
	// schemas.
	Commands []string
	// Catalog, when set, is offered as the events_catalog tool and the
	// events://catalog resource.
	Catalog tools.Catalog
	// Clock times the activity of HTTP sessions and the heartbeats of
	// events/stream; nil is the wall clock.
	Clock clock.Clock
	// EventsHeartbeat is how often an events/stream (SEP-3415) sends a
	// heartbeat; zero means DefaultEventsHeartbeat.
	EventsHeartbeat time.Duration
	// Conversation configures conversation events
	// (conversation/userMessage); the zero value injects summaries.
	Conversation ConversationOptions
	// Webhooks, when set, offers the SEP-3415 webhook delivery mode
	// (events/subscribe) through the operator's webhook handler; its
	// jobs must then run through WebhookHandler. Nil: poll and push only.
	Webhooks *webhook.Sender
}

// CatalogURI is the resource that holds the event catalog.
const CatalogURI = "events://catalog"

// addCatalogResource serves the event catalog as a resource.
func (s *Server) addCatalogResource(c tools.Catalog) {
	s.mcp.AddResource(&mcp.Resource{
		URI:         CatalogURI,
		Name:        "catalog",
		Title:       "Event catalog",
		Description: "The event types this server can deliver, their sources, data schemas and examples (the same as the events_catalog tool).",
		MIMEType:    "application/json",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		cat, err := c.Get(ctx, mcpe.CatalogRequest{})
		if err != nil {
			return nil, err
		}
		return jsonResource(CatalogURI, cat)
	})
}

// jsonResource is a resources/read result that holds v as JSON.
func jsonResource(uri string, v any) (*mcp.ReadResourceResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

// Server is the MCP side of mcpe-server.
type Server struct {
	opts Options
	log  *slog.Logger
	// streamsCtx ends, with EndStreams, when events/streams are to end;
	// streams wakes them when deliveries are for them.
	streamsCtx context.Context
	endStreams context.CancelFunc
	streams    *streamHub
	mcp        *mcp.Server
	caps       mcpe.Capability
	// sessionPrefix starts the principals of sessions without a token.
	sessionPrefix string
	tools         *tools.Set
	res           *resourceSubs // event:// resource subscriptions

	mu       sync.Mutex
	attached map[*mcp.ServerSession]string      // session -> principal
	fixed    map[*mcp.ServerSession]string      // principals set by Connect
	lines    map[*mcp.ServerSession]*lineWriter // sessions made by ConnectIO
	wg       sync.WaitGroup
	// live watches the HTTP sessions; maxSessions bounds those of one
	// principal.
	live        *liveness
	maxSessions int
	// events serves the SEP-3415 events extension; nil when the Service
	// cannot.
	events          EventsBackend
	eventsHeartbeat time.Duration
	// webhooks serves SEP-3415 webhook subscriptions; nil when not offered.
	webhooks *webhookState
	// types sends notifications/events/list_changed.
	types *typeWatch
	// positions hold each attached session's *subscriptions.Position.
	positions sync.Map
}

// instructions tell a client what the server is for.
const instructions = "This server delivers events from the outside world (GitHub, Slack, alerts, " +
	"anything posted to it) to you. Subscribe with events_subscribe; matching events arrive as events/event " +
	"notifications and always wait in your inbox, which events_poll reads. Manage subscriptions with " +
	"events_list, events_pause, events_resume, events_update and events_unsubscribe."

// New builds the server.
func New(opts Options) (*Server, error) {
	if opts.Service == nil || opts.Sessions == nil {
		return nil, errors.New("server: Options.Service and Options.Sessions are required")
	}
	if err := CheckBridge(); err != nil {
		return nil, err
	}
	opts.Version = cmp.Or(opts.Version, "dev")
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	opts.Clock = cmp.Or[clock.Clock](opts.Clock, clock.Real{})
	if err := opts.Conversation.Validate(); err != nil {
		return nil, fmt.Errorf("server: Options.Conversation: %w", err)
	}
	sessionPrefix := opts.Service.RunPrefix()
	switch {
	case sessionPrefix == "":
		sessionPrefix = SessionPrincipalPrefix
	case !strings.HasPrefix(sessionPrefix, SessionPrincipalPrefix):
		return nil, fmt.Errorf("server: the service names sessions' principals %q...; they must start with %q (its EphemeralPrefix)", sessionPrefix, SessionPrincipalPrefix)
	}
	s := &Server{
		streams:       newStreamHub(opts.Sessions),
		res:           newResourceSubs(),
		opts:          opts,
		sessionPrefix: sessionPrefix,
		log:           opts.Logger,
		caps:          opts.Service.Capability(),
		attached:      make(map[*mcp.ServerSession]string),
		fixed:         make(map[*mcp.ServerSession]string),
		lines:         make(map[*mcp.ServerSession]*lineWriter),
		maxSessions:   maxSessionsPerPrincipal,
	}
	s.streamsCtx, s.endStreams = context.WithCancel(context.Background())
	s.live = newLiveness(opts.Clock, sessionTimeout, s.streamOpened)
	caps := &mcp.ServerCapabilities{
		Logging:      &mcp.LoggingCapabilities{},
		Tools:        &mcp.ToolCapabilities{},
		Resources:    &mcp.ResourceCapabilities{},
		Experimental: map[string]any{"events": s.caps},
	}
	s.events, _ = opts.Service.(EventsBackend)
	if backend, ok := opts.Service.(webhookBackend); ok && s.events != nil && opts.Webhooks != nil {
		s.webhooks = &webhookState{sender: opts.Webhooks, backend: backend,
			verified: make(map[string]time.Time), timers: make(map[string]clock.Timer)}
	}
	if s.events != nil {
		caps.AddExtension(EventsExtension, map[string]any{"listChanged": true})
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "mcpe-server", Version: opts.Version}, &mcp.ServerOptions{
		Instructions:       instructions,
		Logger:             redactSessionIDs(opts.Logger),
		Capabilities:       caps,
		SubscribeHandler:   s.subscribeResource,
		UnsubscribeHandler: s.unsubscribeResource,
	})
	s.mcp.AddReceivingMiddleware(s.middleware, s.requestMiddleware, s.listenMiddleware)
	s.mcp.AddSendingMiddleware(s.ackMiddleware)
	if err := s.addEventsExtension(opts.EventsHeartbeat); err != nil {
		return nil, err
	}
	s.rearmWebhooks()
	s.tools = tools.Register(s.mcp, tools.Options{
		Service:   opts.Service,
		Principal: s.principal,
		Logger:    opts.Logger,
		Commands:  opts.Commands,
		Catalog:   opts.Catalog,
	})
	if opts.Catalog != nil {
		s.addCatalogResource(opts.Catalog)
	}
	s.addEventTemplates()
	s.watchTypes()
	if err := s.addWebhookMethods(); err != nil {
		return nil, err
	}
	if err := mcp.AddReceivingCustomMethod(s.mcp, MethodUserMessage, s.userMessage); err != nil {
		return nil, err
	}
	return s, nil
}

// Tools returns the server's tools, callable in process (for agent
// handlers).
func (s *Server) Tools() *tools.Set { return s.tools }

// SessionsOf returns the live sessions of principal.
func (s *Server) SessionsOf(principal string) []*mcp.ServerSession {
	return s.sessionsWhere(func(_ *mcp.ServerSession, p string) bool { return p == principal })
}

// sessionsWhere returns the attached sessions for which keep, given each
// with its principal, reports true.
func (s *Server) sessionsWhere(keep func(ss *mcp.ServerSession, principal string) bool) []*mcp.ServerSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*mcp.ServerSession
	for ss, p := range s.attached {
		if keep(ss, p) {
			out = append(out, ss)
		}
	}
	return out
}

// CloseTokenlessSessions ends every session without a token (its principal
// is its own, named after this run): when another server took this run as
// ended and deleted what they owned, their clients must start new sessions
// rather than go on without their subscriptions. Each ending deletes what
// the session made since.
func (s *Server) CloseTokenlessSessions() int {
	gone := s.sessionsWhere(func(_ *mcp.ServerSession, p string) bool { return strings.HasPrefix(p, s.sessionPrefix) })
	for _, ss := range gone {
		ss.Close()
	}
	return len(gone)
}

// MCP returns the underlying go-sdk server.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Connect serves one session on t for principal; in-memory transports use
// it.
func (s *Server) Connect(ctx context.Context, t mcp.Transport, principal string) (*mcp.ServerSession, error) {
	return s.connect(ctx, t, principal, nil)
}

// ConnectIO serves one session of principal on newline-delimited JSON-RPC
// read from r and written to w, as stdio does; notifications are written to
// w in batches.
func (s *Server) ConnectIO(ctx context.Context, r io.ReadCloser, w io.Writer, principal string) (*mcp.ServerSession, error) {
	lw := newLineWriter(w)
	return s.connect(ctx, stdio.NewTransport(r, lw, 0), principal, lw)
}

func (s *Server) connect(ctx context.Context, t mcp.Transport, principal string, lw *lineWriter) (*mcp.ServerSession, error) {
	ss, err := s.mcp.Connect(ctx, stampTransport{t}, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.fixed[ss] = principal
	if lw != nil {
		s.lines[ss] = lw
	}
	s.mu.Unlock()
	s.afterSession(ss, func() {
		s.mu.Lock()
		delete(s.fixed, ss)
		delete(s.lines, ss)
		s.mu.Unlock()
	})
	return ss, nil
}

// afterSession runs f once ss has ended, as bookkeeping that Wait waits
// for.
func (s *Server) afterSession(ss *mcp.ServerSession, f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ss.Wait()
		f()
	}()
}

// RunStdio serves the local principal on stdin and stdout until the client
// disconnects or ctx ends.
func (s *Server) RunStdio(ctx context.Context) error {
	ss, err := s.ConnectIO(ctx, os.Stdin, os.Stdout, LocalPrincipal)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-done
		return nil
	case err := <-done:
		return err
	}
}

// Wait blocks until the bookkeeping of every ended session is done.
func (s *Server) Wait() { s.wg.Wait() }

// middleware attaches each session to the registry the first time it
// completes anything after initialize (notifications/initialized, or any
// request under protocol 2026-07-28, which has no initialize), and adds the
// events capability to the initialize and server/discover results.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if ok && method == "initialize" && ss.ID() != "" && ss.InitializeParams() == nil {
			if err := s.admit(ss, req.GetExtra()); err != nil {
				return nil, err
			}
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return res, jsonData(err)
		}
		if ok && attaches(method, ss) && !statelessHTTP(ss, req.GetExtra()) {
			s.attach(ss, req.GetExtra())
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			return &initializeResult{InitializeResult: r, s: s}, nil
		case *mcp.DiscoverResult:
			return &discoverResult{DiscoverResult: r, s: s}, nil
		}
		return res, nil
	}
}

// principalKey and listenKey mark a request's context with its principal
// and with being a subscriptions/listen request.
type principalKey struct{}
type listenKey struct{}

// requestMiddleware puts each request's principal in its context, for the
// handlers that get no mcp.RequestExtra (resources/subscribe reached
// through subscriptions/listen, custom methods), and marks
// subscriptions/listen requests.
func (s *Server) requestMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			ctx = context.WithValue(ctx, principalKey{}, s.principalOf(ss, req.GetExtra()))
			if pos, ok := s.positions.Load(ss); ok {
				ctx = subscriptions.WithPosition(ctx, pos.(*subscriptions.Position))
			}
		}
		if method == methodListen {
			ctx = context.WithValue(ctx, listenKey{}, true)
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		if method == "resources/list" {
			if r, ok := res.(*mcp.ListResourcesResult); ok && r.NextCursor == "" {
				s.addListedResources(ctx, r)
			}
		}
		return res, nil
	}
}

// requestPrincipal returns the principal of the request ctx belongs to.
func (s *Server) requestPrincipal(ctx context.Context, ss *mcp.ServerSession, extra *mcp.RequestExtra) string {
	if p, ok := ctx.Value(principalKey{}).(string); ok {
		return p
	}
	return s.principalOf(ss, extra)
}

// attaches reports whether completing method makes ss a session that
// notifications can reach. A session of stateless Streamable HTTP
// (protocol 2026-07-28) lasts one request and never is: notifications
// reach such a client on its subscriptions/listen streams (listen.go). Stateful HTTP sessions (those with an ID) speak
// 2025-11-25 and wait for notifications/initialized; there, server/discover
// is only the go-sdk client's probe for the 2026-07-28 protocol, answered in a
// session of its own that is dropped at once.
func attaches(method string, ss *mcp.ServerSession) bool {
	switch method {
	case "initialize":
		return false
	case "server/discover":
		return ss.ID() == ""
	}
	return true
}

// principalOf resolves the principal of a session: the one given to
// Connect, else the bearer token's, else one per HTTP session.
func (s *Server) principalOf(ss *mcp.ServerSession, extra *mcp.RequestExtra) string {
	s.mu.Lock()
	p, ok := s.fixed[ss]
	if !ok {
		p, ok = s.attached[ss]
	}
	s.mu.Unlock()
	switch {
	case ok:
		return p
	case extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "":
		return extra.TokenInfo.UserID
	case ss.ID() != "":
		return s.sessionPrincipal(ss.ID())
	}
	return LocalPrincipal
}

// sessionPrincipal is the principal of an HTTP session without a token:
// the run's prefix and a hash of its ID, which is its only credential and
// must not end up in logs or in the database.
func (s *Server) sessionPrincipal(id string) string {
	return s.sessionPrefix + shortHash(id, 16)
}

func (s *Server) principal(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
	if req.Session == nil {
		return "", errors.New("no session")
	}
	return s.principalOf(req.Session, req.Extra), nil
}

func (s *Server) attach(ss *mcp.ServerSession, extra *mcp.RequestExtra) {
	principal := s.principalOf(ss, extra)
	s.mu.Lock()
	if _, done := s.attached[ss]; done {
		s.mu.Unlock()
		return
	}
	s.attached[ss] = principal
	lw := s.lines[ss] // set when ConnectIO made ss
	s.wg.Add(1)       // Wait waits for this attachment too
	s.mu.Unlock()

	sink, err := SessionSink(ss)
	if err != nil {
		s.log.Error("cannot send notifications to this session", "principal", principal, "error", err)
		s.wg.Done()
		return
	}
	var inner realtime.Sink = sink
	if id := ss.ID(); id != "" {
		// An HTTP session (admitted at its initialize): notifications reach
		// it only while its event stream is open.
		inner = &streamSink{Sink: sink, id: id, live: s.live}
	} else if lw != nil {
		inner = lineSink{lw}
	}
	detach := s.opts.Sessions.Attach(principal, s.wrapSink(ss, inner))
	if pos, err := s.opts.Service.NewPosition(context.Background(), principal); err != nil {
		s.log.Warn("no events_poll position of its own for this session", "principal", principal, "error", err)
	} else {
		s.positions.Store(ss, pos)
	}
	s.log.Info("session connected", "principal", principal)
	s.log.Debug("session connected", "principal", principal, "session_id", ss.ID())
	go func() {
		defer s.wg.Done()
		ss.Wait()
		detach()
		s.mu.Lock()
		delete(s.attached, ss)
		s.mu.Unlock()
		s.positions.Delete(ss)
		s.log.Info("session ended", "principal", principal)
		s.log.Debug("session ended", "principal", principal, "session_id", ss.ID())
		if strings.HasPrefix(principal, SessionPrincipalPrefix) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.opts.Service.ForgetPrincipal(ctx, principal); err != nil {
				s.log.Error("delete subscriptions of ended session", "principal", principal, "error", err)
			}
		}
	}()
}

// admit starts watching ss, a new HTTP session, until it ends: it is
// closed when abandoned. Past maxSessions for its principal, it closes the
// one idle longest; without a token, it refuses ss instead.
func (s *Server) admit(ss *mcp.ServerSession, extra *mcp.RequestExtra) error {
	principal := s.principalOf(ss, extra)
	max := s.maxSessions
	closing, ok := s.live.admit(ss, principal, max)
	if !ok {
		s.log.Warn("too many sessions without a token: refusing a new one", "max", max)
		return &jsonrpc.Error{Code: CodeResourceExhausted, Message: fmt.Sprintf("this server already has %d MCP sessions "+
			"without a token, the most it allows; end sessions you no longer use (DELETE "+
			"with their Mcp-Session-Id) or wait for idle ones to time out, or have the operator configure auth.tokens, "+
			"with which each principal has sessions of its own", max)}
	}
	for _, old := range closing {
		s.log.Info("too many sessions for one principal: closing the one idle longest", "principal", principal, "max", max)
		old.Close()
	}
	s.afterSession(ss, func() { s.live.remove(ss.ID()) })
	return nil
}

// streamOpened wakes the writer of ss, whose event stream just opened:
// until then nothing could reach it.
func (s *Server) streamOpened(ss *mcp.ServerSession) {
	s.mu.Lock()
	principal, ok := s.attached[ss]
	s.mu.Unlock()
	if ok {
		s.opts.Sessions.Wake(principal)
	}
}

// Close stops the watch on HTTP sessions. Sessions themselves end with
// their transports (App.CloseSessions closes them all).
func (s *Server) Close() {
	s.closeTypeWatch()
	s.EndStreams()
	s.live.stop()
	s.closeWebhooks()
}

// EndStreams ends every events/stream in progress (with its empty result),
// so that closing their sessions does not wait on them. Call it before
// closing sessions at shutdown.
func (s *Server) EndStreams() { s.endStreams() }

// HTTPOptions configure the Streamable HTTP handler.
type HTTPOptions struct {
	// Tokens map bearer tokens to principals. When it holds any, every
	// request needs a valid token (401 otherwise); when empty, each MCP
	// session is its own principal.
	Tokens *httpapi.Tokens
	// Stateless serves protocol 2026-07-28 to the clients that ask for it
	// (a request whose Mcp-Protocol-Version says so), statelessly: each
	// request is a session of its own, and notifications reach the client
	// only on its subscriptions/listen streams (listen.go). It needs
	// Tokens: without them an HTTP client's only identity is its session.
	// Off, or without tokens, such requests go to the stateful handler,
	// which refuses them with the versions it accepts, and the client
	// falls back to 2025-11-25.
	Stateless bool
}

// HTTPHandler returns the Streamable HTTP handler. Protocol 2025-11-25 and
// older are served in stateful sessions, whose notifications go out on
// each session's standalone GET stream; protocol 2026-07-28 statelessly
// when opts.Stateless says so. Call it once; Close stops the watch on its
// sessions.
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	stateful := s.live.handler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{Logger: redactSessionIDs(s.log)}))
	h := eventsHTTP(stateful)
	if opts.Tokens.Len() == 0 {
		return h
	}
	if opts.Stateless {
		h = eventsHTTP(s.byProtocol(stateful))
	}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		principal, ok := opts.Tokens.Lookup(token)
		if !ok {
			return nil, fmt.Errorf("%w: unknown bearer token", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: principal}, nil
	}
	// The refusal is ours (WWW-Authenticate: Bearer, the JSON body every
	// endpoint answers with); the go-sdk's middleware, which then always
	// passes, puts the principal where its handler reads it.
	sdk := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := opts.Tokens.Authenticate(w, r, "a token of auth.tokens"); ok {
			sdk.ServeHTTP(w, r)
		}
	})
}

// byProtocol sends the requests of protocol 2026-07-28 to a stateless
// handler, the others to stateful.
func (s *Server) byProtocol(stateful http.Handler) http.Handler {
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{Logger: redactSessionIDs(s.log), Stateless: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= protocolListen {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// initializeResult and discoverResult (protocol 2026-07-28) add the
// top-level events capability, where MCPE clients look for it, and
// capabilityExtras to the SDK's results, whose methods they keep.
type initializeResult struct {
	*mcp.InitializeResult
	s *Server
}

func (r *initializeResult) MarshalJSON() ([]byte, error) {
	return r.s.withCapabilities(r.InitializeResult)
}

type discoverResult struct {
	*mcp.DiscoverResult
	s *Server
}

func (r *discoverResult) MarshalJSON() ([]byte, error) { return r.s.withCapabilities(r.DiscoverResult) }

// withCapabilities encodes result with the capabilities this server adds.
func (s *Server) withCapabilities(result any) ([]byte, error) {
	b, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	fields, err := jsonObject(b)
	if err != nil {
		return nil, err
	}
	caps, err := jsonObject(fields["capabilities"])
	if err != nil {
		return nil, err
	}
	if caps["events"], err = json.Marshal(s.caps); err != nil {
		return nil, err
	}
	if err := s.capabilityExtras(caps); err != nil {
		return nil, err
	}
	if fields["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}
