package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

const (
	// protocolLegacy is the newest version with the initialize handshake:
	// one long-lived session carries every notification (over HTTP, the
	// standalone GET stream). A command is asked for it by default.
	protocolLegacy = "2025-11-25"
	// protocolListen is the first version in which list changes and
	// resource updates flow over subscriptions/listen streams. A URL is
	// offered it by default; a server that does not take it (every
	// stateful Streamable HTTP server) falls back to protocolLegacy.
	protocolListen = "2026-07-28"
	// setupTimeout bounds connecting and the set-up that follows (log
	// level, resource subscriptions).
	setupTimeout = 30 * time.Second
	// callTimeout bounds a request made while the session is up.
	callTimeout = 30 * time.Second
	// stdioGrace is how long a command has to exit once its stdin is
	// closed, and again after SIGTERM, before it is killed.
	stdioGrace = 2 * time.Second
	// queueSize bounds the events of one upstream waiting to be published;
	// when it is full, reading from the upstream waits.
	queueSize = 256
	// maxResourcePages bounds the pages of resources/list read at once.
	maxResourcePages = 100
	// keepAlive is how often an idle session is pinged; after
	// keepAliveFailures missed pings in a row the session is closed and
	// retried, so that an upstream that hangs without closing the
	// connection is noticed.
	keepAlive         = 30 * time.Second
	keepAliveFailures = 2
)

// upstream is the connection to one upstream server.
type upstream struct {
	a   *Adapter
	cfg Upstream
	// protocol is the version asked for: 2025-11-25 for a command,
	// 2026-07-28 for a URL (see the package doc). Tests set others.
	protocol string
	log      *slog.Logger
	queue    chan mcpe.Event
	// httpBase carries the requests of a URL upstream; nil for a command.
	httpBase *http.Transport

	mu    sync.Mutex
	state mcpe.SourceState
}

func newUpstream(a *Adapter, cfg Upstream) *upstream {
	u := &upstream{
		a:        a,
		cfg:      cfg,
		protocol: protocolListen,
		log:      a.opts.Logger.With("upstream", cfg.Name),
		queue:    make(chan mcpe.Event, queueSize),
		state:    mcpe.SourceState{Name: cfg.Name, Status: StatusConnecting},
	}
	if cfg.URL != "" {
		u.httpBase = newHTTPBase()
	} else {
		u.protocol = protocolLegacy
	}
	return u
}

// newHTTPBase returns the HTTP transport of a URL upstream. Its streams
// (subscriptions/listen, the standalone GET) are opened with contexts that
// only an unsubscribe or the session's end cancel, so the wait for a
// response's headers is bounded here: a server that accepts a request and
// never answers cannot hold the adapter up.
func newHTTPBase() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = callTimeout
	return t
}

// setState records a new status; lastErr and next are kept only when set.
func (u *upstream) setState(status string, lastErr error, next time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.state.Status = status
	u.state.Since = u.a.opts.Clock.Now().UTC().Format(time.RFC3339)
	u.state.NextAttempt = ""
	if !next.IsZero() {
		u.state.NextAttempt = next.UTC().Format(time.RFC3339)
	}
	if lastErr != nil {
		u.state.LastError = lastErr.Error()
	}
}

// run connects, serves the session until it ends, and retries, until ctx
// is done.
func (u *upstream) run(ctx context.Context) {
	r := retrier{backoff: u.a.backoff}
	clk := u.a.opts.Clock
	for {
		u.setState(StatusConnecting, nil, time.Time{})
		connected, upFor, err := u.serve(ctx)
		if u.httpBase != nil {
			// Connections to a server that went away are of no use to the
			// next attempt.
			u.httpBase.CloseIdleConnections()
		}
		if ctx.Err() != nil {
			return
		}
		delay := r.failed(upFor)
		next := clk.Now().Add(delay)
		u.setState(StatusRetrying, err, next)
		u.log.Warn("mcp upstream unavailable; retrying", "error", err, "retry_in", delay)
		// The timer is set before the event is published, so that whoever
		// hears of the outage can move a fake clock past it.
		due := make(chan struct{})
		timer := clk.AfterFunc(delay, func() { close(due) })
		if connected {
			u.emit(ctx, kindDisconnected, disconnectedData{Server: u.cfg.Name, Error: err.Error(), NextAttempt: next.UTC().Format(time.RFC3339)}, mcpe.PriorityHigh)
		}
		select {
		case <-due:
		case <-ctx.Done():
			timer.Stop()
			return
		}
	}
}

// serve runs one session: it connects, sets the session up, and waits for
// it to end. It reports whether the session came up, for how long, and why
// it failed or ended.
func (u *upstream) serve(ctx context.Context) (connected bool, upFor time.Duration, err error) {
	setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	s := &session{u: u, ctx: ctx, relist: make(chan struct{}, 1), broken: make(chan error, 1), subscribed: make(map[string]bool)}
	transport, stderr, err := u.transport(s)
	if err != nil {
		return false, 0, err
	}
	mc := mcp.NewClient(&mcp.Implementation{Name: "mcpe-server", Version: version()}, s.clientOptions())
	cs, err := mc.Connect(setupCtx, client.Tap(transport, s.custom), &mcp.ClientSessionOptions{ProtocolVersion: u.protocol})
	if err != nil {
		return false, 0, stderr.explain(fmt.Errorf("connect: %w", err))
	}
	s.cs = cs
	subscribing := s.setup(setupCtx)
	cancel()

	clk := u.a.opts.Clock
	start := clk.Now()
	u.setState(StatusConnected, nil, time.Time{})
	init := cs.InitializeResult()
	data := connectedData{Server: u.cfg.Name}
	if init != nil {
		data.ProtocolVersion = init.ProtocolVersion
		if init.ServerInfo != nil {
			data.ServerName, data.ServerVersion = init.ServerInfo.Name, init.ServerInfo.Version
		}
	}
	u.log.Info("mcp upstream connected", "protocol_version", data.ProtocolVersion, "server_name", data.ServerName)
	u.emit(ctx, kindConnected, data, mcpe.PriorityNormal)

	var wg sync.WaitGroup
	watchCtx, stopWatch := context.WithCancel(ctx)
	if subscribing {
		wg.Go(func() { s.watchResources(watchCtx) })
	}
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	select {
	case err = <-ended:
	case err = <-s.broken:
		// A subscriptions/listen stream broke: the session can no longer
		// hear what it listened to, so it is started over.
		cs.Close()
		<-ended
	case <-ctx.Done():
		cs.Close()
		err = <-ended
	}
	stopWatch()
	wg.Wait()
	closeErr := cs.Close() // reaps a stdio command
	upFor = clk.Now().Sub(start)
	if err == nil {
		err = errors.New("the server closed the session")
	}
	err = fmt.Errorf("session ended: %w", err)
	if exit := (*exec.ExitError)(nil); errors.As(closeErr, &exit) {
		err = fmt.Errorf("%w (command %v)", err, exit)
	}
	return true, upFor, stderr.explain(err)
}

// transport returns a new transport to the upstream for session s, and for
// a command what keeps its stderr.
func (u *upstream) transport(s *session) (mcp.Transport, *stderrLog, error) {
	if len(u.cfg.Command) > 0 {
		cmd := exec.Command(u.cfg.Command[0], u.cfg.Command[1:]...)
		if len(u.cfg.Env) > 0 {
			cmd.Env = os.Environ()
			for _, k := range slices.Sorted(maps.Keys(u.cfg.Env)) {
				cmd.Env = append(cmd.Env, k+"="+u.cfg.Env[k])
			}
		}
		stderr := &stderrLog{log: u.log}
		cmd.Stderr = stderr
		// A grandchild that keeps stderr open must not hold up Wait.
		cmd.WaitDelay = stdioGrace
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: stdioGrace}, stderr, nil
	}
	hc := &http.Client{Transport: &httpTransport{base: u.httpBase, headers: u.cfg.Headers, s: s}}
	// MaxRetries -1: a broken stream ends the session at once, and the
	// adapter reconnects on its own clock and says so in States.
	return &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: hc, MaxRetries: -1}, nil, nil
}

// emit queues one of the adapter's own events.
func (u *upstream) emit(ctx context.Context, kind string, data any, p mcpe.Priority) {
	ev, err := ownEvent(u.cfg.Name, kind, data, p, u.a.opts.Clock.Now())
	if err != nil {
		u.log.Error("mcp upstream: cannot build event", "kind", kind, "error", err)
		return
	}
	u.enqueue(ctx, ev)
}

// retryLaterFirst and retryLaterMax bound the waits before an event the
// server could not take now is published again.
const (
	retryLaterFirst = 50 * time.Millisecond
	retryLaterMax   = 5 * time.Second
)

// enqueue queues ev for publishing, waiting while the queue is full.
func (u *upstream) enqueue(ctx context.Context, ev mcpe.Event) {
	select {
	case u.queue <- ev:
	case <-ctx.Done():
	}
}

// publishLoop publishes the queued events in order until ctx is done.
func (u *upstream) publishLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-u.queue:
			res, err := u.publishOne(ctx, ev)
			switch {
			case err != nil:
				u.log.Warn("mcp upstream: event not published", "type", ev.Type, "error", err)
			case res.Duplicate:
				u.log.Debug("mcp upstream: duplicate event", "type", ev.Type, "source_event_id", ev.Metadata.SourceEventID)
			}
		}
	}
}

// publishOne publishes ev, waiting and trying again while the server asks
// to send it later (a subscriber's session too far behind, a store that
// cannot keep it now): the queue, and then the upstream's notifications,
// wait meanwhile rather than lose it.
func (u *upstream) publishOne(ctx context.Context, ev mcpe.Event) (subscriptions.PublishResult, error) {
	delay := retryLaterFirst
	for {
		res, err := u.a.opts.Publisher.Publish(ctx, ev)
		if !errors.Is(err, subscriptions.ErrBusy) && !errors.Is(err, subscriptions.ErrUnavailable) {
			return res, err
		}
		u.log.Debug("mcp upstream: event not accepted now; trying again", "type", ev.Type, "error", err, "retry_in", delay)
		due := make(chan struct{})
		timer := u.a.opts.Clock.AfterFunc(delay, func() { close(due) })
		select {
		case <-ctx.Done():
			timer.Stop()
			return res, err
		case <-due:
		}
		delay = min(2*delay, retryLaterMax)
	}
}

// session is one connection to an upstream.
type session struct {
	u   *upstream
	ctx context.Context // the adapter's: events are queued until it is done
	cs  *mcp.ClientSession
	// relist asks watchResources to list the resources again.
	relist chan struct{}
	// subscribed are the URIs subscribed to; only setup and watchResources,
	// one after the other, touch it.
	subscribed map[string]bool
	// broken receives why the session must be started over.
	broken   chan error
	warnOnce sync.Once
}

// clientOptions installs the handlers of the notifications the SDK knows.
func (s *session) clientOptions() *mcp.ClientOptions {
	name := s.u.cfg.Name
	return &mcp.ClientOptions{
		Logger: s.u.log,
		// No roots: this client has none to offer.
		Capabilities:              &mcp.ClientCapabilities{},
		KeepAlive:                 keepAlive,
		KeepAliveFailureThreshold: keepAliveFailures,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.u.emit(s.ctx, kindToolsListChanged, serverData{Server: name}, mcpe.PriorityNormal)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			s.u.emit(s.ctx, kindPromptsListChanged, serverData{Server: name}, mcpe.PriorityNormal)
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			s.u.emit(s.ctx, kindResourcesListChanged, serverData{Server: name}, mcpe.PriorityNormal)
			select {
			case s.relist <- struct{}{}:
			default:
			}
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			s.publish(resourceEvent(name, req.Params, s.u.a.opts.Clock.Now()))
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			s.publish(logEvent(name, req.Params, s.u.a.opts.Clock.Now()))
		},
	}
}

// publish queues ev, or logs why the notification it came from is skipped.
func (s *session) publish(ev mcpe.Event, err error) {
	if err != nil {
		s.u.log.Warn("mcp upstream: notification skipped", "error", err)
		return
	}
	s.u.enqueue(s.ctx, ev)
}

// custom receives the MCPE notifications client.Tap takes out of the
// stream.
func (s *session) custom(method string, params json.RawMessage) {
	events, errs := notificationEvents(s.u.cfg.Name, method, params)
	for _, err := range errs {
		s.u.log.Warn("mcp upstream: event skipped", "method", method, "error", err)
	}
	if events == nil && errs == nil {
		s.u.log.Debug("mcp upstream: notification ignored", "method", method)
	}
	for _, ev := range events {
		s.u.enqueue(s.ctx, ev)
	}
}

// setup asks for the log level and subscribes to the resources, as far as
// the server supports them, and reports whether it subscribes to resources.
// Failures are logged: the session stays useful.
func (s *session) setup(ctx context.Context) (subscribing bool) {
	init := s.cs.InitializeResult()
	if init == nil || init.Capabilities == nil {
		return false
	}
	caps := init.Capabilities
	// Over HTTP under protocolListen every request is a session of its own
	// (and the SDK sends logging/setLevel without the _meta that version
	// needs), so no level can be kept for messages sent outside a request.
	if caps.Logging != nil && !(s.u.cfg.URL != "" && init.ProtocolVersion >= protocolListen) {
		level := mcp.LoggingLevel(s.u.a.logLevel)
		if err := s.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			s.u.log.Warn("mcp upstream: logging/setLevel failed", "level", level, "error", err)
		}
	}
	subscribing = s.u.a.maxSubscribed > 0 && caps.Resources != nil && caps.Resources.Subscribe
	if subscribing {
		s.syncResources(ctx)
	}
	return subscribing
}

// watchResources lists the resources again after each
// resources/list_changed, until ctx is done.
func (s *session) watchResources(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.relist:
			callCtx, cancel := context.WithTimeout(ctx, callTimeout)
			s.syncResources(callCtx)
			cancel()
		}
	}
}

// syncResources subscribes to the listed resources not yet subscribed to,
// up to the limit, and unsubscribes from those no longer listed.
func (s *session) syncResources(ctx context.Context) {
	limit := s.u.a.maxSubscribed
	listed, complete, err := s.listResources(ctx, limit)
	if err != nil {
		s.u.log.Warn("mcp upstream: resources/list failed", "error", err)
		return
	}
	if complete {
		// Only a complete listing says what is gone.
		for _, uri := range slices.Sorted(maps.Keys(s.subscribed)) {
			if slices.Contains(listed, uri) {
				continue
			}
			delete(s.subscribed, uri)
			if err := s.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
				s.u.log.Debug("mcp upstream: resources/unsubscribe failed", "uri", uri, "error", err)
			}
		}
	}
	capped := false
	for _, uri := range listed {
		if s.subscribed[uri] {
			continue
		}
		if len(s.subscribed) >= limit {
			capped = true
			break
		}
		if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			s.u.log.Warn("mcp upstream: resources/subscribe failed", "uri", uri, "error", err)
			if ctx.Err() != nil {
				return
			}
			continue
		}
		s.subscribed[uri] = true
	}
	if capped || !complete {
		s.u.log.Warn("mcp upstream: too many resources; the rest are not watched", "max_subscribed_resources", limit)
	}
}

// listResources lists up to limit resource URIs (more pages are read while
// subscriptions may have to move), reporting whether the list is complete.
func (s *session) listResources(ctx context.Context, limit int) (uris []string, complete bool, err error) {
	seen := make(map[string]bool)
	var cursor string
	for range maxResourcePages {
		res, err := s.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, false, err
		}
		for _, r := range res.Resources {
			if r == nil || r.URI == "" || seen[r.URI] {
				continue
			}
			seen[r.URI] = true
			uris = append(uris, r.URI)
		}
		if res.NextCursor == "" {
			return uris, true, nil
		}
		if len(uris) >= 2*limit {
			return uris, false, nil
		}
		cursor = res.NextCursor
	}
	return uris, false, nil
}

// httpTransport adds the configured headers to every request, and watches
// the streams the session hears notifications on: a subscriptions/listen
// stream that ends without being cancelled breaks the session (the SDK
// would go on without it, deaf), and a standalone GET stream the server
// refuses means it cannot send anything outside a request.
type httpTransport struct {
	base    http.RoundTripper
	headers map[string]string
	s       *session
}

// methodHeader names the JSON-RPC method of a request under protocolListen.
const methodHeader = "Mcp-Method"

func (t *httpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	sse := err == nil && mt == "text/event-stream"
	switch {
	case req.Method == http.MethodGet && (resp.StatusCode != http.StatusOK || !sse):
		// Warned once per session: the server keeps no stream for
		// notifications outside requests.
		t.s.warnOnce.Do(func() {
			t.s.u.log.Warn("mcp upstream: stream for notifications outside requests refused", "http_status", resp.StatusCode, "protocol_version", t.s.u.protocol,
				"effect", "no list change, resource update, log message or event can arrive from it",
				"hint", "a stateless Streamable HTTP server needs protocol 2026-07-28, where they come over subscriptions/listen")
		})
	case req.Method == http.MethodPost && sse && req.Header.Get(methodHeader) == "subscriptions/listen":
		resp.Body = &watchedBody{ReadCloser: resp.Body, ctx: req.Context(), ended: t.s.listenEnded}
	}
	return resp, nil
}

// watchedBody reports the end of a stream that its request did not cancel.
type watchedBody struct {
	io.ReadCloser
	ctx   context.Context
	ended func(error)
	once  sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(func() {
			if b.ctx.Err() != nil {
				return // cancelled: an unsubscribe, or the session closing
			}
			why := err
			if why == io.EOF {
				why = errors.New("the server ended it")
			}
			b.ended(why)
		})
	}
	return n, err
}

// listenEnded breaks the session: a subscriptions/listen stream ended.
func (s *session) listenEnded(err error) {
	select {
	case s.broken <- fmt.Errorf("a subscriptions/listen stream ended: %w", err):
	default:
	}
}

// maxStderrLine bounds one buffered line of a command's stderr.
const maxStderrLine = 4096

// stderrLog logs a command's stderr line by line and keeps the last line,
// which often says why the command stopped.
type stderrLog struct {
	log *slog.Logger

	mu   sync.Mutex
	line []byte
	last string
}

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range p {
		if c == '\n' || len(w.line) >= maxStderrLine {
			w.flushLocked()
			if c == '\n' {
				continue
			}
		}
		w.line = append(w.line, c)
	}
	return len(p), nil
}

func (w *stderrLog) flushLocked() {
	line := string(bytes.TrimSuffix(w.line, []byte("\r")))
	w.line = w.line[:0]
	if line == "" {
		return
	}
	w.last = line
	w.log.Info("mcp upstream stderr", "line", line)
}

// explain adds the command's last stderr line to err. A nil w (an HTTP
// upstream) returns err.
func (w *stderrLog) explain(err error) error {
	if w == nil || err == nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	if w.last == "" {
		return err
	}
	return fmt.Errorf("%w; last stderr line: %q", err, w.last)
}

// version is this program's module version, for the client's
// Implementation.
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "devel"
}
