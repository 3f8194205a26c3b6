package realtime

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Defaults for Options.
const (
	DefaultWindowEntries  = 1024
	DefaultWindowBytes    = 4 << 20
	DefaultBatchMessages  = 256
	DefaultBatchBytes     = 1 << 20
	DefaultWriteTimeout   = 10 * time.Second
	DefaultStreamWait     = 10 * time.Second
	DefaultBacklogEntries = 100_000
	DefaultBacklogBytes   = 256 << 20
	DefaultLagWarning     = 30 * time.Second
	maxBackoff            = time.Second
	firstBackoff          = 10 * time.Millisecond
	catchUpLimit          = 256
	retentionReason       = "retention"
	closeWait             = 5 * time.Second
	lagWarningEvery       = time.Minute
	// keptDigests is how many of the digests and expiry notices kept while
	// their owner had no live session a session is sent when it becomes
	// live: the most recent ones.
	keptDigests = 10
)

// Sink is the sending side of one live session.
type Sink interface {
	// Write writes msgs, in order, as JSON-RPC notifications, and returns
	// once they are handed to the client's connection (flushed).
	Write(ctx context.Context, msgs []Message) error
}

// LiveSink is a Sink that knows whether notifications can reach its session
// now: an HTTP session without an open event stream cannot. A session that
// is not live is not written to and does not count as connected; when it
// becomes live it receives what comes from then on.
type LiveSink interface {
	Sink
	Live() bool
}

// Inbox is what a session that fell behind the in-memory window catches up
// from: the durable inbox (subscriptions.Store implements it).
type Inbox interface {
	ReadInbox(ctx context.Context, principal string, after int64, limit int) ([]subscriptions.InboxEntry, bool, error)
	// PrunedThrough returns the highest sequence number retention removed
	// from principal's inbox, or 0.
	PrunedThrough(ctx context.Context, principal string) (int64, error)
	// PendingEntries returns up to limit of principal's most recent entries
	// kept for it (marked pending), oldest first; ClearPending unmarks those
	// up to seq once a session of principal was sent them.
	PendingEntries(ctx context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error)
	ClearPending(ctx context.Context, principal string, seq int64) error
	// LatestInbox returns the newest limit entries of principal's inbox.
	LatestInbox(ctx context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error)
}

// Rendering returns the label of a subscription and the delivery whose
// Shape cuts its events.
type Rendering func(subscriptionID string) (label string, d mcpe.Delivery)

// Options configure a Registry. A nil *Options means all defaults.
type Options struct {
	// Inbox is where a session that fell behind the window reads what it
	// missed; nil keeps a session that falls that far behind from catching
	// up: it is told where to poll from (events/missed).
	Inbox Inbox
	// WindowEntries and WindowBytes bound what is kept in memory per
	// principal for its live sessions; zero means the defaults. With more
	// than 16 principals, each keeps its share of 16 WindowBytes (at least
	// its newest delivery). A session behind the window reads from the
	// Inbox.
	WindowEntries int
	WindowBytes   int
	// BatchMessages and BatchBytes bound one write to a session; zero
	// means the defaults.
	BatchMessages int
	BatchBytes    int
	// WriteTimeout bounds one write; zero means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// StreamWait is how long a session whose writes fail is retried before
	// it is given up (its client is gone), counted from its last successful
	// write or its attach; zero means DefaultStreamWait.
	StreamWait time.Duration
	// BacklogEntries bounds the deliveries a live session may have been
	// owed and not yet sent, as DefaultBacklogBytes bounds their bytes;
	// zero means DefaultBacklogEntries.
	BacklogEntries int64
	// LagWarning is how far behind, in time, a session may fall before it
	// is logged as lagging; zero means DefaultLagWarning.
	LagWarning time.Duration
	// Rendering, when set, says how a subscription's notifications are
	// made (subscriptions.Service.Rendering); nil sends events whole.
	Rendering Rendering
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Sent, when set, is called after each successful write with the
	// notifications written, for metrics. It runs on the session's writer:
	// it must be cheap and must not block.
	Sent func(msgs []Message)
}

func (o *Options) defaults() {
	orDefault(&o.WindowEntries, DefaultWindowEntries)
	orDefault(&o.WindowBytes, DefaultWindowBytes)
	orDefault(&o.BatchMessages, DefaultBatchMessages)
	orDefault(&o.BatchBytes, DefaultBatchBytes)
	orDefault(&o.WriteTimeout, DefaultWriteTimeout)
	orDefault(&o.StreamWait, DefaultStreamWait)
	orDefault(&o.BacklogEntries, DefaultBacklogEntries)
	orDefault(&o.LagWarning, DefaultLagWarning)
	o.Clock = cmp.Or[clock.Clock](o.Clock, clock.Real{})
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
}

// orDefault sets *v to d when it is zero or negative.
func orDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Registry keeps, for each principal with live sessions, a window of its
// latest deliveries in memory, and for each session a cursor: how far in
// the principal's inbox it has been sent. A session's writer sends what
// follows its cursor, several notifications per write, from the window or,
// when the session fell behind it, from the inbox: a session that is slower
// than the events lags and catches up in order; it loses nothing that the
// inbox still holds. Memory per principal is bounded by the window, and per
// session by one batch. Registry implements subscriptions.Deliverer and
// subscriptions.Presence.
type Registry struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	owners  map[string]*owner
	ownerN  uint64        // owners made so far
	arrived chan struct{} // Arrived
	closed  bool
	wg      sync.WaitGroup
	lastLag time.Time

	sent, skipped, failed atomic.Int64
}

var (
	_ subscriptions.Deliverer = (*Registry)(nil)
	_ subscriptions.Presence  = (*Registry)(nil)
	_ subscriptions.Sessions  = (*Registry)(nil)
)

// owner is the state of one principal with sessions.
type owner struct {
	principal string
	sessions  map[*session]struct{}
	// id and start are what Owners tells of it.
	id    uint64
	start int64
	// window holds the latest deliveries, oldest first; evicted is the seq
	// of the newest one evicted from it (what a session behind it reads
	// from the inbox).
	window      []item
	windowBytes int
	evicted     int64
	// head is the seq of the newest delivery; appended and appendedBytes
	// count the deliveries and their size since the owner was created.
	head                    int64
	appended, appendedBytes int64
}

// item is one delivery in a window; pending when it is kept in the inbox
// until a session of its owner is sent it.
type item struct {
	seq     int64
	msgs    []Message
	bytes   int
	at      time.Time
	pending bool
}

// session is one live session's place in its owner's deliveries.
type session struct {
	o    *owner
	sink Sink
	// cursor is the seq of the last delivery sent; sent and sentBytes
	// count what was sent (or skipped), to compare with the owner's
	// appended counts.
	cursor          int64
	sent, sentBytes int64
	// oldest is when the oldest delivery not yet sent was made.
	oldest time.Time
	// replay are messages to send before the next deliveries: events the
	// operator replays and events/missed notices. Only the writer takes
	// from it; others append.
	replay []Message
	// takes is whether the session is sent what was kept for its owner
	// (digests and expiry notices that no session was sent yet). Such a
	// session is registered by its writer when it becomes live (wasLive):
	// its cursor goes to the end of its owner's inbox then (skipThrough),
	// or before the oldest entry kept (keptFrom) when there are any; of
	// the entries up to skipThrough, only those kept are sent.
	takes, wasLive        bool
	keptFrom, skipThrough int64
	// registering is held by takeKept: one registration at a time.
	registering sync.Mutex
	wake        chan struct{}
	done        chan struct{}
	once        sync.Once
	// attached is when Attach ran; the stream wait counts from it until the
	// first successful write.
	attached time.Time
	// ahead are inbox entries read for a catch-up and not sent yet, those
	// that follow aheadFrom; only the session's writer uses them.
	ahead     []subscriptions.InboxEntry
	aheadFrom int64
}

// NewRegistry returns an empty Registry.
func NewRegistry(opts *Options) *Registry {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.defaults()
	return &Registry{opts: o, log: o.Logger, owners: make(map[string]*owner), arrived: make(chan struct{}, 1)}
}

// Attach registers a live session of principal and starts its writer. It
// receives the deliveries made from now on. The returned function detaches
// it; it is safe to call more than once.
func (r *Registry) Attach(principal string, sink Sink) (detach func()) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return func() {}
	}
	o := r.owners[principal]
	if o == nil {
		r.mu.Unlock()
		start := r.start(principal) // not under the lock
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return func() {}
		}
		if o = r.owners[principal]; o == nil {
			r.ownerN++
			o = &owner{principal: principal, sessions: make(map[*session]struct{}), id: r.ownerN, start: start}
			r.owners[principal] = o
			select {
			case r.arrived <- struct{}{}:
			default:
			}
		}
	}
	s := &session{
		o:        o,
		sink:     sink,
		cursor:   o.head,
		sent:     o.appended,
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		attached: r.opts.Clock.Now(),
		takes:    keeps(sink) && r.opts.Inbox != nil,
	}
	s.sentBytes = o.appendedBytes
	o.sessions[s] = struct{}{}
	r.wg.Add(1)
	r.mu.Unlock()
	if s.takes && s.live() {
		r.takeKept(s) // what is committed once Attach returns is owed
	}
	go r.write(s)
	r.log.Debug("session attached", "principal", principal)
	return func() { r.detach(s) }
}

func (r *Registry) detach(s *session) {
	s.once.Do(func() {
		r.mu.Lock()
		o := s.o
		delete(o.sessions, s)
		if len(o.sessions) == 0 && r.owners[o.principal] == o {
			delete(r.owners, o.principal)
		}
		r.mu.Unlock()
		close(s.done)
		r.log.Debug("session detached", "principal", o.principal)
	})
}

// live reports whether s can be written to now.
func (s *session) live() bool {
	l, ok := s.sink.(LiveSink)
	return !ok || l.Live()
}

// Live returns how many sessions of principal are attached.
func (r *Registry) Live(principal string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.owners[principal]; o != nil {
		return len(o.sessions)
	}
	return 0
}

// Principals returns the principals with sessions attached: on a store
// shared with other processes, what those deliver to them is read and
// handed to Deliver (subscriptions.Sessions).
func (r *Registry) Principals() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.AppendSeq(make([]string, 0, len(r.owners)), maps.Keys(r.owners))
}

// Owners implements subscriptions.Sessions.
func (r *Registry) Owners(principals []string) []subscriptions.Owner {
	out := make([]subscriptions.Owner, len(principals))
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, p := range principals {
		if o := r.owners[p]; o != nil {
			out[i] = subscriptions.Owner{ID: o.id, Start: o.start}
		}
	}
	return out
}

// start returns where principal's inbox ends now, on a store that numbers
// each principal's inbox apart (its follower starts a new owner there), or
// -1: unknown, or not needed.
func (r *Registry) start(principal string) int64 {
	sh, ok := r.opts.Inbox.(subscriptions.Shared)
	if !ok || !sh.InboxPerPrincipal() {
		return -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.WriteTimeout)
	defer cancel()
	heads, _, err := sh.Heads(ctx, []string{principal})
	if err != nil {
		r.log.Error("read where a principal's inbox ends", "principal", principal, "error", err)
		return -1
	}
	return heads[principal]
}

// inboxEnd returns the number of the newest entry of principal's inbox
// committed so far.
func (r *Registry) inboxEnd(ctx context.Context, principal string) (int64, error) {
	latest, err := r.opts.Inbox.LatestInbox(ctx, principal, 1)
	if err != nil {
		return 0, err
	}
	end, err := r.opts.Inbox.PrunedThrough(ctx, principal)
	if len(latest) > 0 {
		end = max(end, latest[0].Seq)
	}
	return end, err
}

// Arrived implements subscriptions.Sessions: it receives after a principal
// with no session here got one.
func (r *Registry) Arrived() <-chan struct{} { return r.arrived }

// Connected reports whether principal has a session that notifications can
// reach now (a replay queued while its Attach still reads what was kept is
// sent once it has). A digest fired while none is kept for the owner's
// return.
func (r *Registry) Connected(principal string) bool {
	return r.anyLive(principal, func(*session) bool { return true })
}

// anyLive reports whether principal has a live session for which f, called
// under the lock, holds.
func (r *Registry) anyLive(principal string, f func(*session) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.owners[principal]; o != nil {
		for s := range o.sessions {
			if s.live() && f(s) {
				return true
			}
		}
	}
	return false
}

// Deliver hands over deliveries just committed, in commit order, to the
// live sessions of their owners. It does not block: the writers send.
func (r *Registry) Deliver(entries []subscriptions.InboxEntry) {
	// Messages are made, outside the lock, of the entries owed to a
	// session here only: those of others' sessions are not this process's
	// work.
	r.mu.Lock()
	owed := make([]int, 0, len(entries))
	for i, e := range entries {
		if o := r.owners[e.Principal]; o != nil && e.Seq > o.head {
			owed = append(owed, i)
		}
	}
	r.mu.Unlock()
	if len(owed) == 0 {
		return
	}
	now := r.opts.Clock.Now()
	items := make([]item, len(owed))
	for k, i := range owed {
		items[k] = item{seq: entries[i].Seq, msgs: messages(entries[i], r.opts.Rendering), at: now, pending: entries[i].Pending}
		for _, m := range items[k].msgs {
			items[k].bytes += m.size()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, i := range owed {
		o := r.owners[entries[i].Principal]
		if o == nil || entries[i].Seq <= o.head {
			continue // the session left, or this was read from the inbox meanwhile
		}
		r.appendLocked(o, items[k])
	}
}

// windowsShare bounds the windows of all principals together, in
// WindowBytes: with more principals than that, each keeps its share.
const windowsShare = 16

// appendLocked adds a delivery to o's window, evicting the oldest past the
// bounds, applies the backlog rule, and wakes the writers.
func (r *Registry) appendLocked(o *owner, it item) {
	o.window = append(o.window, it)
	o.windowBytes += it.bytes
	o.head = it.seq
	o.appended++
	o.appendedBytes += int64(it.bytes)
	limit := min(r.opts.WindowBytes, windowsShare*r.opts.WindowBytes/len(r.owners))
	for len(o.window) > r.opts.WindowEntries || o.windowBytes > limit && len(o.window) > 1 {
		o.evicted = o.window[0].seq
		o.windowBytes -= o.window[0].bytes
		o.window[0] = item{}
		o.window = o.window[1:]
	}
	for s := range o.sessions {
		if !s.live() || s.takes && !s.wasLive {
			// Not reachable now: it gets what comes once it is.
			s.cursor, s.sent, s.sentBytes = o.head, o.appended, o.appendedBytes
			s.wasLive = false
			continue
		}
		if s.sent == o.appended-1 {
			s.oldest = it.at
		}
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func missed(from, to int64, reason string) Message {
	params, _ := json.Marshal(mcpe.MissedParams{FromCursor: mcpe.FormatCursor(from), ToCursor: mcpe.FormatCursor(to), Reason: reason})
	return Message{Method: mcpe.MethodMissed, Params: params}
}

// Full reports whether a live session of principal is owed as much as it
// may be: the server then refuses events for principal, with 429, until the
// session catches up, so a live session loses nothing.
func (r *Registry) Full(principal string) bool {
	// What a write in progress carries counts until it is written.
	return r.anyLive(principal, func(s *session) bool {
		return s.o.appended-s.sent >= r.opts.BacklogEntries || s.o.appendedBytes-s.sentBytes >= DefaultBacklogBytes
	})
}

// Cursors returns, for each principal with a live session, the lowest
// cursor among them: what retention must keep in the inbox so that a live
// session loses nothing.
func (r *Registry) Cursors() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.owners))
	for p, o := range r.owners {
		for s := range o.sessions {
			if !s.live() {
				continue
			}
			if c, ok := out[p]; !ok || s.cursor < c {
				out[p] = s.cursor
			}
		}
	}
	return out
}

// Replay sends entries kept for principal while it was away (digests fired
// while it had no live session) to each of its live sessions, before the
// deliveries that follow.
func (r *Registry) Replay(principal string, entries []subscriptions.InboxEntry) {
	var msgs []Message
	for _, e := range entries {
		msgs = append(msgs, messages(e, r.opts.Rendering)...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.owners[principal]; o != nil {
		for s := range o.sessions {
			s.replay = append(s.replay, msgs...)
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
}

// Wake tells principal's sessions that one of them just became live (its
// event stream opened): what is committed once Wake returns is owed to it.
func (r *Registry) Wake(principal string) {
	var becoming []*session
	r.mu.Lock()
	if o := r.owners[principal]; o != nil {
		for s := range o.sessions {
			if s.takes && !s.wasLive && s.live() {
				becoming = append(becoming, s)
			}
		}
	}
	r.mu.Unlock()
	for _, s := range becoming {
		r.takeKept(s)
	}
	r.Replay(principal, nil)
}

// WakeSink is a Sink that sends nothing itself: it only tells a reader of
// the inbox (an SEP-3415 events/stream) that there is news. What is written
// to it is not counted as sent, and it is no session for Transports.
type WakeSink interface {
	Sink
	OnlyWakes()
}

// KeepingSink is a Sink that may not deliver MCPE notifications (a
// subscriptions/listen stream for resources only): when Keeps is false, it
// is not sent what was kept for its owner, and a WakeSink never is.
type KeepingSink interface {
	Sink
	Keeps() bool
}

func keeps(sink Sink) bool {
	_, wakes := sink.(WakeSink)
	k, ok := sink.(KeepingSink)
	return !wakes && (!ok || k.Keeps())
}

// TransportSink is a Sink that names its transport, such as "stdio" or
// "http", for Transports.
type TransportSink interface {
	Sink
	Transport() string
}

// Transports counts the attached sessions by transport: a TransportSink
// names its own; otherwise a LiveSink (which has an event stream to open)
// counts as "http" and any other Sink as "stdio".
func (r *Registry) Transports() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, 2)
	for _, o := range r.owners {
		for s := range o.sessions {
			if _, wakes := s.sink.(WakeSink); !wakes {
				out[transportOf(s.sink)]++
			}
		}
	}
	return out
}

func transportOf(sink Sink) string {
	switch s := sink.(type) {
	case TransportSink:
		return s.Transport()
	case LiveSink:
		return "http"
	default:
		return "stdio"
	}
}

// Lag is how far one live session is behind.
type Lag struct {
	Principal string
	// Deliveries are the deliveries made and not yet sent to it.
	Deliveries int64
	// Behind is how long ago the oldest of them was made.
	Behind time.Duration
}

// Lags returns the sessions that are behind, for operators.
func (r *Registry) Lags() []Lag {
	now := r.opts.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Lag
	for p, o := range r.owners {
		for s := range o.sessions {
			if n := o.appended - s.sent; n > 0 {
				out = append(out, Lag{Principal: p, Deliveries: n, Behind: now.Sub(s.oldest)})
			}
		}
	}
	return out
}

// batch is what a writer sends next.
type batch struct {
	msgs    []Message
	from    int64 // the cursor before it
	cursor  int64 // the cursor once sent
	count   int64 // deliveries it completes
	bytes   int64
	catchUp bool // the session is behind the window: read the inbox
	// skipThrough and keptFrom are the session's, for a catch-up.
	skipThrough, keptFrom int64
	replayLen             int // how many of msgs came from the replay queue
	// pending is the newest kept entry it carries, which ClearPending
	// unmarks once it is sent.
	pending int64
	// becameLive: read what was kept for the owner first.
	becameLive bool
}

// next takes what s is to send next: its replay queue, then the window's
// deliveries after its cursor. A session that is not live is moved to the
// newest delivery instead.
func (r *Registry) next(s *session) batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := s.o
	if !s.live() {
		s.wasLive = false
		s.cursor, s.sent, s.sentBytes = o.head, o.appended, o.appendedBytes
		return batch{from: s.cursor, cursor: s.cursor}
	}
	if s.takes && !s.wasLive {
		return batch{from: s.cursor, cursor: s.cursor, becameLive: true}
	}
	b := batch{from: s.cursor, cursor: s.cursor, msgs: s.replay[:len(s.replay):len(s.replay)], replayLen: len(s.replay)}
	if s.cursor < o.evicted || s.cursor < s.skipThrough {
		b.catchUp, b.skipThrough, b.keptFrom = true, s.skipThrough, s.keptFrom
		return b
	}
	size := 0
	for _, it := range o.window {
		if it.seq <= s.cursor {
			continue
		}
		if len(b.msgs) > 0 && (len(b.msgs)+len(it.msgs) > r.opts.BatchMessages || size+it.bytes > r.opts.BatchBytes) {
			break
		}
		b.msgs = append(b.msgs, it.msgs...)
		size += it.bytes
		b.cursor = it.seq
		b.count++
		b.bytes += int64(it.bytes)
		if it.pending {
			b.pending = it.seq
		}
	}
	return b
}

// write sends what s is owed until it is detached or given up.
func (r *Registry) write(s *session) {
	defer r.wg.Done()
	lastOK := s.attached
	for {
		b := r.next(s)
		if b.becameLive {
			r.takeKept(s)
			continue
		}
		if b.catchUp {
			var err error
			if b, err = r.catchUp(s, b); err != nil {
				r.log.Error("read the inbox for a session that fell behind", "principal", s.o.principal, "error", err)
			}
		}
		if len(b.msgs) == 0 && b.cursor == b.from {
			select {
			case <-s.done:
				return
			case <-s.wake:
				continue
			}
		}
		if !r.send(s, b.msgs, &lastOK) {
			r.detach(s)
			return
		}
		if b.pending > 0 {
			r.clearPending(s, b.pending)
		}
		r.mu.Lock()
		s.replay = s.replay[b.replayLen:]
		if b.cursor > s.cursor {
			s.cursor = b.cursor
			s.sent = min(s.sent+b.count, s.o.appended)
			s.sentBytes = min(s.sentBytes+b.bytes, s.o.appendedBytes)
			if i := slices.IndexFunc(s.o.window, func(it item) bool { return it.seq > s.cursor }); i >= 0 {
				s.oldest = s.o.window[i].at
			}
		}
		r.mu.Unlock()
		r.warnIfLagging(s)
		select {
		case <-s.done:
			return
		default:
		}
	}
}

// catchUp reads the deliveries s missed from the inbox: up to a batch of
// them after its cursor, or, when retention removed some of them, the
// notice saying where to poll from.
func (r *Registry) catchUp(s *session, b batch) (batch, error) {
	if r.opts.Inbox == nil {
		// Nothing to catch up from: s moves to its owner's newest delivery,
		// told where to poll from for what it did not get.
		r.mu.Lock()
		r.skipped.Add(s.o.appended - s.sent)
		s.replay = append(s.replay, missed(s.cursor, s.o.head, retentionReason))
		s.cursor, s.sent, s.sentBytes = s.o.head, s.o.appended, s.o.appendedBytes
		r.mu.Unlock()
		return batch{}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.WriteTimeout)
	defer cancel()
	if s.aheadFrom != b.from || len(s.ahead) == 0 {
		// Read ahead: a batch takes a part of what one read returns, and
		// the next batch the rest.
		s.ahead, s.aheadFrom = nil, b.from
		pruned, err := r.opts.Inbox.PrunedThrough(ctx, s.o.principal)
		if err != nil {
			return batch{}, err
		}
		if pruned > b.from {
			r.mu.Lock()
			if s.cursor == b.from {
				// What the session was not owed (up to skipThrough) is
				// no loss to tell of.
				s.cursor = pruned
				if from := max(b.from, s.skipThrough); pruned > from {
					s.replay = append(s.replay, missed(from, pruned, retentionReason))
				}
			}
			r.mu.Unlock()
			return batch{from: b.from, cursor: b.from}, nil
		}
		if s.ahead, _, err = r.opts.Inbox.ReadInbox(ctx, s.o.principal, b.from, catchUpLimit); err != nil {
			return batch{}, err
		}
	}
	for len(s.ahead) > 0 {
		e := s.ahead[0]
		if e.Seq <= b.skipThrough && (!e.Pending || e.Seq < b.keptFrom) {
			// Delivered before the session became live: not owed.
			b.cursor = e.Seq
			s.ahead = s.ahead[1:]
			continue
		}
		msgs := messages(e, r.opts.Rendering)
		n := 0
		for _, m := range msgs {
			n += m.size()
		}
		if len(b.msgs) > b.replayLen && (len(b.msgs)+len(msgs) > r.opts.BatchMessages || int(b.bytes)+n > r.opts.BatchBytes) {
			break
		}
		b.msgs = append(b.msgs, msgs...)
		b.cursor = e.Seq
		if e.Seq > b.skipThrough {
			b.count++
			b.bytes += int64(n)
		}
		if e.Pending {
			b.pending = e.Seq
		}
		s.ahead[0] = subscriptions.InboxEntry{}
		s.ahead = s.ahead[1:]
	}
	// What is left follows the cursor the batch reaches once sent.
	s.aheadFrom = b.cursor
	return b, nil
}

// takeKept registers s, which just became live: its cursor goes to the end
// of its owner's inbox, or before the oldest entry kept for the owner.
func (r *Registry) takeKept(s *session) {
	s.registering.Lock()
	defer s.registering.Unlock()
	r.mu.Lock()
	done := s.wasLive
	r.mu.Unlock()
	if done {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.WriteTimeout)
	defer cancel()
	p := s.o.principal
	kept, err := r.opts.Inbox.PendingEntries(ctx, p, keptDigests)
	end := int64(-1)
	if err == nil {
		end, err = r.inboxEnd(ctx, p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s.wasLive = true
	if err != nil {
		// It gets what comes from now on.
		r.log.Error("read what was kept for a session's owner", "principal", p, "error", err)
		return
	}
	s.cursor, s.skipThrough, s.keptFrom = end, end, end+1
	if len(kept) > 0 {
		s.cursor, s.keptFrom = min(end, kept[0].Seq-1), kept[0].Seq
	}
}

// clearPending unmarks the kept entries of s's owner up to seq, which s was
// sent (when it keeps: see KeepingSink).
func (r *Registry) clearPending(s *session, seq int64) {
	if !keeps(s.sink) || r.opts.Inbox == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.WriteTimeout)
	defer cancel()
	if err := r.opts.Inbox.ClearPending(ctx, s.o.principal, seq); err != nil {
		r.log.Error("unmark what a session was sent as kept", "principal", s.o.principal, "error", err)
	}
}

// send writes msgs, retrying with back-off while the session is within its
// stream wait. It reports false when the session is to be given up, and
// sets lastOK to when a successful write began.
func (r *Registry) send(s *session, msgs []Message, lastOK *time.Time) bool {
	if len(msgs) == 0 {
		return true
	}
	backoff := firstBackoff
	for {
		began := r.opts.Clock.Now()
		ctx, cancel := context.WithTimeout(context.Background(), r.opts.WriteTimeout)
		err := s.sink.Write(ctx, msgs)
		cancel()
		if err == nil {
			if _, wakes := s.sink.(WakeSink); !wakes {
				r.sent.Add(int64(len(msgs)))
				if r.opts.Sent != nil {
					r.opts.Sent(msgs)
				}
			}
			*lastOK = began
			return true
		}
		if r.opts.Clock.Now().Sub(*lastOK) >= r.opts.StreamWait {
			r.failed.Add(1)
			r.log.Warn("session not writable for the stream wait; given up", "principal", s.o.principal, "error", err,
				"stream_wait", r.opts.StreamWait, "effect", "the inbox keeps what it was owed for events_poll")
			return false
		}
		select {
		case <-s.done:
			return false
		case <-r.sleep(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

func (r *Registry) sleep(d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	r.opts.Clock.AfterFunc(d, func() { close(ch) })
	return ch
}

// warnIfLagging logs, at most once a minute, a session that is behind by
// more than LagWarning.
func (r *Registry) warnIfLagging(s *session) {
	now := r.opts.Clock.Now()
	r.mu.Lock()
	behind := s.o.appended - s.sent
	lag := now.Sub(s.oldest)
	warn := behind > 0 && lag > r.opts.LagWarning && now.Sub(r.lastLag) >= lagWarningEvery
	if warn {
		r.lastLag = now
	}
	r.mu.Unlock()
	if warn {
		r.log.Warn("a session is behind: it gets every delivery, late", "principal", s.o.principal, "deliveries_behind", behind, "behind", lag.Round(time.Millisecond))
	}
}

// Stats counts notifications since the registry was made.
type Stats struct {
	// Sent were written to a session.
	Sent int64
	// Skipped are deliveries a session was not sent because retention
	// removed them; it was told where to poll from.
	Skipped int64
	// Failed counts the sessions given up because they could not be
	// written to within the stream wait.
	Failed int64
}

// Stats returns the counters.
func (r *Registry) Stats() Stats {
	return Stats{Sent: r.sent.Load(), Skipped: r.skipped.Load(), Failed: r.failed.Load()}
}

// Close detaches every session and waits, for a few seconds at most, for
// their writers to finish. A write to a client that stopped reading can
// block in the transport beyond any context; Close must not hang shutdown
// on it.
func (r *Registry) Close() {
	r.mu.Lock()
	r.closed = true
	var all []*session
	for _, o := range r.owners {
		for s := range o.sessions {
			all = append(all, s)
		}
	}
	r.mu.Unlock()
	for _, s := range all {
		r.detach(s)
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-r.sleep(closeWait):
		r.log.Warn("a session writer is still blocked in a write; not waiting for it")
	}
}
