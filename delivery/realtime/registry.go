package realtime

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Defaults for Options.
const (
	DefaultQueueSize    = 1024
	DefaultWriteTimeout = 10 * time.Second
	DefaultStreamWait   = 10 * time.Second
)

// Sink is the sending side of one live session.
type Sink interface {
	// Notify writes one notification to the session.
	Notify(ctx context.Context, method string, params json.RawMessage) error
}

// Options configure a Registry. A nil *Options means all defaults.
type Options struct {
	// QueueSize is how many notifications may wait per session; zero means
	// DefaultQueueSize.
	QueueSize int
	// WriteTimeout bounds one write; zero means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// StreamWait is how long a session that cannot take a notification
	// (an HTTP client whose event stream is not open yet, say) is retried
	// before notifications for it are dropped, counted from its last
	// successful write or its attach; zero means DefaultStreamWait.
	StreamWait time.Duration
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Registry maps principals to their live sessions. It implements
// Notifier.
type Registry struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	byOwner map[string]map[*session]struct{}
	closed  bool
	wg      sync.WaitGroup

	sent    atomic.Int64
	dropped atomic.Int64
	failed  atomic.Int64
}

var (
	_ Notifier               = (*Registry)(nil)
	_ subscriptions.Presence = (*Registry)(nil)
)

// NewRegistry returns an empty Registry.
func NewRegistry(opts *Options) *Registry {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.StreamWait <= 0 {
		o.StreamWait = DefaultStreamWait
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Registry{opts: o, log: o.Logger, byOwner: make(map[string]map[*session]struct{})}
}

type message struct {
	method string
	params json.RawMessage
}

type session struct {
	principal string
	sink      Sink
	queue     chan message
	done      chan struct{}
	once      sync.Once
	// attached is when Attach ran; the stream wait counts from it until
	// the first successful write.
	attached time.Time
}

// Attach registers a live session of principal and starts its writer. The
// returned function detaches it; it is safe to call more than once.
func (r *Registry) Attach(principal string, sink Sink) (detach func()) {
	s := &session{
		principal: principal,
		sink:      sink,
		queue:     make(chan message, r.opts.QueueSize),
		done:      make(chan struct{}),
		attached:  r.opts.Clock.Now(),
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return func() {}
	}
	set := r.byOwner[principal]
	if set == nil {
		set = make(map[*session]struct{})
		r.byOwner[principal] = set
	}
	set[s] = struct{}{}
	r.wg.Add(1)
	r.mu.Unlock()
	go r.write(s)
	r.log.Debug("session attached", "principal", principal)
	return func() { r.detach(s) }
}

func (r *Registry) detach(s *session) {
	s.once.Do(func() {
		r.mu.Lock()
		if set := r.byOwner[s.principal]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(r.byOwner, s.principal)
			}
		}
		r.mu.Unlock()
		close(s.done)
		r.log.Debug("session detached", "principal", s.principal)
	})
}

// Live returns how many sessions of principal are attached.
func (r *Registry) Live(principal string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byOwner[principal])
}

// Connected reports whether principal has a session that notifications can
// reach now: a sink that reports its liveness (LiveSink: an HTTP session
// without an open event stream is not live) counts only while it is live.
// A digest fired while none is kept for the owner's return.
func (r *Registry) Connected(principal string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.byOwner[principal] {
		if l, ok := s.sink.(LiveSink); !ok || l.Live() {
			return true
		}
	}
	return false
}

// LiveSink is a Sink that knows whether notifications can reach its
// session now.
type LiveSink interface {
	Sink
	Live() bool
}

// Notify queues n for every live session of principal. It never blocks.
func (r *Registry) Notify(principal string, n Notification) {
	r.mu.Lock()
	set := r.byOwner[principal]
	if len(set) == 0 {
		r.mu.Unlock()
		return
	}
	targets := make([]*session, 0, len(set))
	for s := range set {
		targets = append(targets, s)
	}
	r.mu.Unlock()

	params, ok := n.Params.(json.RawMessage) // already encoded
	if !ok {
		var err error
		if params, err = json.Marshal(n.Params); err != nil {
			r.log.Error("encode notification", "method", n.Method, "error", err)
			return
		}
	}
	m := message{method: n.Method, params: params}
	for _, s := range targets {
		select {
		case s.queue <- m:
		default:
			if d := r.dropped.Add(1); d == 1 || d%1000 == 0 {
				r.log.Warn("session too slow: notification dropped (the inbox still has it for events_poll)",
					"principal", principal, "method", n.Method, "dropped_total", d)
			}
		}
	}
}

// write sends queued notifications to one session until it is detached.
func (r *Registry) write(s *session) {
	defer r.wg.Done()
	lastOK := s.attached
	for {
		select {
		case <-s.done:
			return
		case m := <-s.queue:
			r.send(s, m, &lastOK)
		}
	}
}

// send writes m, retrying with back-off while the session is within its
// stream wait. It reports whether m was written, and then sets lastOK to
// when the write began: read before the sink is called, so that a test
// holding the sink knows which time was taken.
func (r *Registry) send(s *session, m message, lastOK *time.Time) bool {
	backoff := 10 * time.Millisecond
	for {
		began := r.opts.Clock.Now()
		ctx, cancel := context.WithTimeout(context.Background(), r.opts.WriteTimeout)
		err := s.sink.Notify(ctx, m.method, m.params)
		cancel()
		if err == nil {
			r.sent.Add(1)
			*lastOK = began
			return true
		}
		if r.opts.Clock.Now().Sub(*lastOK) >= r.opts.StreamWait {
			if f := r.failed.Add(1); f == 1 || f%1000 == 0 {
				r.log.Warn("notification not delivered (the inbox still has it for events_poll)",
					"principal", s.principal, "method", m.method, "error", err, "failed_total", f)
			}
			return false
		}
		select {
		case <-s.done:
			return false
		case <-r.sleep(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

func (r *Registry) sleep(d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	r.opts.Clock.AfterFunc(d, func() { close(ch) })
	return ch
}

// Stats counts notifications since the registry was made.
type Stats struct {
	// Sent were written to a session.
	Sent int64
	// Dropped found the session's queue full.
	Dropped int64
	// Failed could not be written within the stream wait.
	Failed int64
}

// Stats returns the counters.
func (r *Registry) Stats() Stats {
	return Stats{Sent: r.sent.Load(), Dropped: r.dropped.Load(), Failed: r.failed.Load()}
}

// closeWait bounds how long Close waits for writers, on Options.Clock. A
// write to a client that stopped reading can block in the transport beyond
// any context; Close must not hang shutdown on it.
const closeWait = 5 * time.Second

// Close detaches every session and waits, for a few seconds at most, for
// their writers to finish.
func (r *Registry) Close() {
	r.mu.Lock()
	r.closed = true
	var all []*session
	for _, set := range r.byOwner {
		for s := range set {
			all = append(all, s)
		}
	}
	r.mu.Unlock()
	for _, s := range all {
		r.detach(s)
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	expired := make(chan struct{})
	timer := r.opts.Clock.AfterFunc(closeWait, func() { close(expired) })
	defer timer.Stop()
	select {
	case <-done:
	case <-expired:
		r.log.Warn("a session writer is still blocked in a write; not waiting for it")
	}
}
