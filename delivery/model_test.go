package delivery_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/delivery"
	"github.com/mcpe-server/mcpe-server/delivery/cron"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/delivery/scheduled"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// This file is the model-based test of the delivery core: random sequences
// of operations (subscribe, update, pause, resume, unsubscribe, expiry,
// events from two sources with and without sourceEventId, digests firing,
// throttle windows folding and ending,
// sessions attaching, reading slowly, failing writes, event streams opening
// and closing, sessions dropped, events_poll with any cursor, an
// operator's replay, restarts) are run against the real Service, store
// (SQLite; PostgreSQL in TestDeliveryModelPostgres), realtime registry and
// schedulers, with a fake clock, and after
// every step what must hold is checked against a plain model:
//
//   - each accepted event is in the inbox once for each subscription it
//     matched while active (realtime), or in one digest or still waiting
//     (cron, scheduled); an expired subscription has one expiry notice;
//   - a throttled subscription's notifications of one group are a window
//     apart at least, and stand (with folded) for each event it matched
//     once: all of them once their windows have ended, unless it was paused;
//   - a session's notifications come in inbox order with no repeats, and
//     are all owed to it; a session that is live and reads is sent, once it
//     catches up, everything the inbox holds for it: what was committed
//     while it was live and what was kept for its owner when it became live;
//   - once its owner has such a session, nothing is kept any more;
//   - nothing panics.
//
// rapid prints the seed of a failing run and shrinks it to a short
// sequence; go test -run TestDeliveryModel -rapid.seed=N replays it.
// MCPE_MODEL_DURATION=1h runs checks for that long; CI runs the default
// -rapid.checks budget (100; 30 under the race detector).

const (
	modelStart = "2026-03-02T08:00:00Z"
	settleWait = 10 * time.Second
)

var (
	modelTypes    = []string{"a.x", "a.z", "b.y"}
	modelPatterns = []string{"a.x", "a.*", "b.y", "b.*"} // not "*": it would match the probes (sync)
	principals    = []string{"alice", "bob"}
)

func TestDeliveryModel(t *testing.T) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set && raceChecks != "" {
		if err := flag.Set("rapid.checks", raceChecks); err != nil {
			t.Fatal(err)
		}
	}
	d, err := time.ParseDuration(os.Getenv("MCPE_MODEL_DURATION"))
	if err != nil || d <= 0 {
		rapid.Check(t, runModel(openSQLite))
		return
	}
	for end, i := time.Now().Add(d), 0; time.Now().Before(end); i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) { rapid.Check(t, runModel(openSQLite)) })
		if t.Failed() {
			return
		}
	}
}

// got is one notification as a session received it.
type got struct {
	method, sub string
	cursor      int64 // 0: sent without one (a replay)
	events      []string
}

// modelSink records what a session is sent. Its writes fail while failing
// is set, and wait while slow is set, until the model settles.
type modelSink struct {
	mu        sync.Mutex
	got       []got
	live      atomic.Bool
	failing   atomic.Bool
	slow      atomic.Bool
	gate      chan struct{}
	gateMu    sync.Mutex
	decodeErr error
}

func newModelSink() *modelSink { return &modelSink{gate: make(chan struct{})} }

func (s *modelSink) Write(ctx context.Context, msgs []realtime.Message) error {
	// slow and the gate are read together: a write that saw slow set just
	// before release would otherwise wait on the next gate, for the whole
	// write timeout, past the model's wait to settle.
	s.gateMu.Lock()
	slow, gate := s.slow.Load(), s.gate
	s.gateMu.Unlock()
	if slow {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.failing.Load() {
		return errors.New("connection reset")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		var p struct {
			SubscriptionID string            `json:"subscriptionId"`
			Cursor         string            `json:"cursor"`
			Event          *mcpe.Event       `json:"event"`
			Events         []json.RawMessage `json:"events"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			s.decodeErr = err
			continue
		}
		g := got{method: m.Method, sub: p.SubscriptionID}
		if p.Cursor != "" {
			c, err := mcpe.ParseCursor(p.Cursor)
			if err != nil {
				s.decodeErr = err
			}
			g.cursor = c
		}
		if p.Event != nil {
			g.events = []string{p.Event.ID}
		}
		for _, raw := range p.Events {
			var ev mcpe.Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				s.decodeErr = err
			}
			g.events = append(g.events, ev.ID)
		}
		s.got = append(s.got, g)
	}
	return nil
}

// release lets writes that wait go, and those to come.
func (s *modelSink) release() {
	s.gateMu.Lock()
	s.slow.Store(false)
	close(s.gate)
	s.gate = make(chan struct{})
	s.gateMu.Unlock()
}

func (s *modelSink) received() []got {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// httpSink is a session of Streamable HTTP: live while its stream is open.
type httpSink struct{ *modelSink }

func (s httpSink) Live() bool { return s.live.Load() }

// interval is a span of the owner's inbox a session is owed: the entries
// after from, up to to, and kept, those kept for the owner when it became
// live. sure is false for a span that ended while the session could not
// be written to: what was in flight may or may not have gone.
type interval struct {
	from, to int64
	kept     []int64
	sure     bool
}

type modelSession struct {
	principal string
	on        *server
	sink      *modelSink
	http      bool
	live      bool
	detach    func()
	spans     []interval
	replays   int // replays sent while it was attached
}

func (s *modelSession) healthy() bool { return !s.sink.failing.Load() && !s.sink.slow.Load() }

type modelSub struct {
	id, principal string
	patterns      []string
	channel       mcpe.Channel
	status        mcpe.Status // active, paused, expired; "" once removed
	expiresAt     time.Time
	deliverAt     time.Time
	events        map[string]string // accepted events it matched while active, with their types
	// throttle is the window of a throttled one; last is when it last
	// matched an event, and paused whether it ever was (which may drop
	// what a window folded).
	throttle  time.Duration
	last      time.Time
	wasPaused bool
}

func (m *modelSub) matches(typ string) bool {
	for _, p := range m.patterns {
		if p == "*" || p == typ || strings.HasSuffix(p, ".*") && strings.HasPrefix(typ, strings.TrimSuffix(p, "*")) {
			return true
		}
	}
	return false
}

// modelStore is a store the model runs on.
type modelStore interface {
	subscriptions.Store
	Close() error
}

// openSQLite opens the model's SQLite database, a file in dir.
func openSQLite(dir string) (modelStore, error) {
	return sqlite.Open(context.Background(), filepath.Join(dir, "mcpe.db"))
}

// server is one server: a run of the delivery core on the database.
type server struct {
	store modelStore
	reg   *realtime.Registry
	svc   *subscriptions.Service
	sched delivery.Schedulers
}

// model is the system under test, one to three servers on one database, and
// what it must do.
type model struct {
	dir     string
	open    func(dir string) (modelStore, error)
	clk     *clocktest.Fake
	servers []*server
	store   modelStore // the first server's, to read what is stored
	subs    []*modelSub
	seen    map[string]bool // source, type, sourceEventId accepted
	events  int
	probes  int
	live    []*modelSession
}

func (m *model) start(t *rapid.T, n int) {
	m.servers = nil
	for range n {
		m.servers = append(m.servers, m.startServer(t))
	}
	m.store = m.servers[0].store
}

func (m *model) startServer(t *rapid.T) *server {
	var err error
	v := &server{}
	if v.store, err = m.open(m.dir); err != nil {
		t.Fatal(err)
	}
	v.reg = realtime.NewRegistry(&realtime.Options{
		Inbox: v.store, WindowEntries: 4, BatchMessages: 3, StreamWait: time.Hour,
	})
	v.svc, err = subscriptions.NewService(subscriptions.ServiceOptions{
		Store: v.store, Deliverer: v.reg, Presence: v.reg, Backlog: v.reg, Clock: m.clk,
		Timings: map[mcpe.Channel]subscriptions.Timing{
			mcpe.ChannelCron:      cron.New(nil),
			mcpe.ChannelScheduled: scheduled.Channel{},
		},
		PruneInterval: 24 * time.Hour,
		Retention: subscriptions.Retention{InboxMaxEntries: 1 << 20, InboxMaxAge: 1e5 * time.Hour,
			DedupWindow: 1e5 * time.Hour, ExpiredMaxAge: 1e5 * time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	channels := append(v.svc.Capability().DeliveryChannels, subscriptions.Windows)
	if v.sched, err = delivery.StartAll(context.Background(), v.svc, channels, &delivery.SchedulerOptions{Clock: m.clk}); err != nil {
		t.Fatal(err)
	}
	return v
}

func (m *model) stop() {
	for _, s := range m.live {
		s.sink.failing.Store(false)
		s.sink.release()
	}
	for _, v := range m.servers {
		v.sched.Stop()
		v.svc.Stop()
		v.reg.Close()
		v.store.Close()
	}
}

// sync waits until the other servers route by what changed on server on:
// a server learns of other servers' changes a moment later. A probe
// subscription made on on after the change routes an event published on
// each other server only once that server has caught up.
func (m *model) sync(t *rapid.T, on *server) {
	if len(m.servers) == 1 {
		return
	}
	ctx := context.Background()
	m.probes++
	typ := fmt.Sprintf("probe.p%d", m.probes)
	sub, err := on.svc.Subscribe(ctx, "probe", mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{typ}}})
	if err != nil {
		t.Fatal(err)
	}
	defer on.svc.Unsubscribe(ctx, "probe", sub.ID)
	for _, v := range m.servers {
		for deadline := time.Now().Add(settleWait); v != on; time.Sleep(time.Millisecond) {
			res, err := v.svc.Publish(ctx, mcpe.Event{Type: typ, Data: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Delivered) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a server did not learn of a subscription made on another in %v", settleWait)
			}
		}
	}
}

// on returns a server to act on.
func (m *model) on(t *rapid.T) *server {
	return m.servers[rapid.IntRange(0, len(m.servers)-1).Draw(t, "server")]
}

// runModel returns the property: one random sequence on stores that open
// opens (on a database of their own each run).
func runModel(open func(dir string) (modelStore, error)) func(*rapid.T) {
	return func(t *rapid.T) { runModelOn(t, open) }
}

func runModelOn(t *rapid.T, open func(dir string) (modelStore, error)) {
	dir, err := os.MkdirTemp("", "mcpe-model-")
	if err != nil {
		t.Fatal(err)
	}
	start, _ := time.Parse(time.RFC3339, modelStart)
	m := &model{dir: dir, open: open, clk: clocktest.NewFake(start), seen: map[string]bool{}}
	servers := rapid.IntRange(1, 3).Draw(t, "servers")
	m.start(t, servers)
	t.Cleanup(func() { m.stop(); os.RemoveAll(dir) })
	ctx := context.Background()

	t.Repeat(map[string]func(*rapid.T){
		"subscribe": func(t *rapid.T) {
			p := rapid.SampledFrom(principals).Draw(t, "principal")
			pats := rapid.SliceOfNDistinct(rapid.SampledFrom(modelPatterns), 1, 2, rapid.ID).Draw(t, "patterns")
			ch := rapid.SampledFrom([]mcpe.Channel{mcpe.ChannelRealtime, mcpe.ChannelRealtime, mcpe.ChannelCron, mcpe.ChannelScheduled}).Draw(t, "channel")
			req := mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: pats}, Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{ch}}}
			ms := &modelSub{principal: p, patterns: pats, channel: ch, status: mcpe.StatusActive, events: map[string]string{}}
			switch ch {
			case mcpe.ChannelRealtime:
				if rapid.Bool().Draw(t, "throttle") {
					ms.throttle = 5 * time.Minute
					req.Delivery.Throttle = &mcpe.Throttle{Window: "5m", GroupBy: "type"}
				}
			case mcpe.ChannelCron:
				req.Delivery.CronSchedule = &mcpe.CronSchedule{Expression: "*/5 * * * *"}
			case mcpe.ChannelScheduled:
				ms.deliverAt = m.clk.Now().Add(time.Duration(rapid.IntRange(1, 20).Draw(t, "deliverIn")) * time.Minute)
				req.Delivery.ScheduledDelivery = &mcpe.ScheduledDelivery{DeliverAt: ms.deliverAt.Format(time.RFC3339)}
			}
			if rapid.Bool().Draw(t, "expires") {
				ms.expiresAt = m.clk.Now().Add(time.Duration(rapid.IntRange(1, 30).Draw(t, "expiresIn")) * time.Minute)
				req.ExpiresAt = ms.expiresAt.Format(time.RFC3339)
			}
			on := m.on(t)
			sub, err := on.svc.Subscribe(ctx, p, req)
			if err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			ms.id = sub.ID
			m.subs = append(m.subs, ms)
			m.sync(t, on)
			t.Logf("subscribed %s at %s: %+v", ms.id, m.clk.Now().Format(time.TimeOnly), req)
		},
		"change": func(t *rapid.T) {
			ms := m.pickSub(t)
			if ms == nil {
				return
			}
			var err error
			on := m.on(t)
			defer m.sync(t, on)
			svc := on.svc
			switch op := rapid.SampledFrom([]string{"pause", "resume", "unsubscribe", "retype"}).Draw(t, "op"); op {
			case "pause":
				_, err = svc.Pause(ctx, ms.principal, ms.id)
				if err == nil {
					ms.status, ms.wasPaused = mcpe.StatusPaused, true
				}
			case "resume":
				_, err = svc.Resume(ctx, ms.principal, ms.id)
				if err == nil {
					ms.status = mcpe.StatusActive
				}
			case "unsubscribe":
				if err = svc.Unsubscribe(ctx, ms.principal, ms.id); err == nil {
					ms.status = ""
				}
			case "retype":
				pats := rapid.SliceOfNDistinct(rapid.SampledFrom(modelPatterns), 1, 2, rapid.ID).Draw(t, "patterns")
				_, err = svc.Update(ctx, ms.principal, mcpe.UpdateRequest{SubscriptionID: ms.id, Filter: &mcpe.Filter{EventTypes: pats}})
				if err == nil {
					ms.patterns = pats
				}
			}
			// Pausing what is paused and the like are refused; what was
			// done must not be.
			if err != nil && !errors.Is(err, subscriptions.ErrNotFound) && !strings.Contains(err.Error(), "already") {
				t.Fatalf("%s: %v", ms.id, err)
			}
			// Events published before the other servers follow a stop
			// are routed by what they knew: the store must leave the
			// stopped subscription out all the same.
			if other := m.servers[len(m.servers)-1]; ms.status != mcpe.StatusActive && other != on {
				for range rapid.IntRange(0, 3).Draw(t, "published before the others follow") {
					m.publishOn(t, other)
				}
			}
		},
		"publish": func(t *rapid.T) {
			for range rapid.IntRange(1, 8).Draw(t, "events") {
				m.publish(t)
			}
		},
		"advance": func(t *rapid.T) {
			m.clk.Advance(time.Duration(rapid.IntRange(1, 12).Draw(t, "minutes")) * time.Minute)
			m.expire()
		},
		"attach": func(t *rapid.T) {
			s := &modelSession{principal: rapid.SampledFrom(principals).Draw(t, "principal"), on: m.on(t), sink: newModelSink(), http: rapid.Bool().Draw(t, "http")}
			var sink realtime.Sink = s.sink
			if s.http {
				sink = httpSink{s.sink}
			} else {
				s.live = true
				s.spans = []interval{m.span(t, s.principal)}
			}
			s.detach = s.on.reg.Attach(s.principal, sink)
			m.live = append(m.live, s)
		},
		"stream": func(t *rapid.T) {
			s := m.pickSession(t, func(s *modelSession) bool { return s.http })
			if s == nil {
				return
			}
			if s.live = !s.live; s.live {
				s.spans = append(s.spans, m.span(t, s.principal))
				s.sink.live.Store(true)
				s.on.reg.Wake(s.principal)
				return
			}
			s.sink.live.Store(false)
			last := &s.spans[len(s.spans)-1]
			last.to, last.sure = m.end(t, s.principal), s.healthy()
		},
		"drop": func(t *rapid.T) {
			s := m.pickSession(t, nil)
			if s == nil {
				return
			}
			s.detach()
			m.live = slices.DeleteFunc(m.live, func(o *modelSession) bool { return o == s })
		},
		"misbehave": func(t *rapid.T) {
			s := m.pickSession(t, nil)
			if s == nil {
				return
			}
			switch rapid.SampledFrom([]string{"slow", "fail", "recover"}).Draw(t, "how") {
			case "slow":
				s.sink.slow.Store(true)
			case "fail":
				s.sink.failing.Store(true)
			default:
				s.sink.failing.Store(false)
				s.sink.release()
			}
		},
		"replay": func(t *rapid.T) {
			ms := m.pickSub(t)
			// A throttled subscription's folded events are not in the inbox.
			if ms == nil || ms.channel != mcpe.ChannelRealtime || ms.throttle > 0 || ms.status != mcpe.StatusActive || len(ms.events) == 0 {
				return
			}
			var ids []string
			for _, id := range slices.Sorted(maps.Keys(ms.events)) {
				if ms.matches(ms.events[id]) {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				return
			}
			on := m.on(t)
			err := on.svc.Replay(ctx, ms.principal, ms.id, rapid.SampledFrom(ids).Draw(t, "event"))
			if errors.Is(err, subscriptions.ErrNoLiveSession) {
				return
			}
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			for _, s := range m.live {
				if s.principal == ms.principal && s.on == on {
					s.replays++
				}
			}
		},
		"poll": func(t *rapid.T) {
			p := rapid.SampledFrom(principals).Draw(t, "principal")
			end := m.end(t, p)
			c := rapid.Int64Range(0, end+3).Draw(t, "cursor")
			_, err := m.on(t).svc.Poll(ctx, p, mcpe.PollRequest{Cursor: mcpe.FormatCursor(c), Limit: rapid.IntRange(0, 5).Draw(t, "limit")})
			var inv *mcpe.InvalidError
			if err != nil && !(c > end && errors.As(err, &inv)) {
				t.Fatalf("events_poll from %d (the inbox ends at %d): %v", c, end, err)
			}
		},
		"restart": func(t *rapid.T) {
			m.stop()
			for _, s := range m.live {
				if s.live {
					last := &s.spans[len(s.spans)-1]
					last.to, last.sure = math.MaxInt64, false
				}
			}
			m.live = nil
			m.start(t, len(m.servers))
			m.expire()
		},
		"": func(t *rapid.T) { m.check(t) },
	})
}

// expire marks what expires when timers run: an expiresAt passed, or an
// active one-time delivery whose time came.
func (m *model) expire() {
	now := m.clk.Now()
	for _, ms := range m.subs {
		gone := !ms.expiresAt.IsZero() && !ms.expiresAt.After(now) ||
			!ms.deliverAt.IsZero() && !ms.deliverAt.After(now) && ms.status == mcpe.StatusActive
		if gone && (ms.status == mcpe.StatusActive || ms.status == mcpe.StatusPaused) {
			ms.status = mcpe.StatusExpired
		}
	}
}

func (m *model) pickSub(t *rapid.T) *modelSub {
	var open []*modelSub
	for _, ms := range m.subs {
		if ms.status == mcpe.StatusActive || ms.status == mcpe.StatusPaused {
			open = append(open, ms)
		}
	}
	if len(open) == 0 {
		return nil
	}
	return rapid.SampledFrom(open).Draw(t, "subscription")
}

func (m *model) pickSession(t *rapid.T, ok func(*modelSession) bool) *modelSession {
	var in []*modelSession
	for _, s := range m.live {
		if ok == nil || ok(s) {
			in = append(in, s)
		}
	}
	if len(in) == 0 {
		return nil
	}
	return rapid.SampledFrom(in).Draw(t, "session")
}

// publish posts one event from one of two sources, with a sourceEventId
// or none, and records where it must go.
func (m *model) publish(t *rapid.T) { m.publishOn(t, m.on(t)) }

// publishOn publishes a random event on server on.
func (m *model) publishOn(t *rapid.T, on *server) {
	typ := rapid.SampledFrom(modelTypes).Draw(t, "type")
	source := rapid.SampledFrom([]string{"ingest", "github"}).Draw(t, "source")
	sid := rapid.SampledFrom([]string{"", "s1", "s2"}).Draw(t, "sourceEventId")
	m.events++
	ev := mcpe.Event{Type: typ, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, m.events)),
		Metadata: mcpe.Metadata{SourceEventID: sid, Priority: mcpe.PriorityNormal}}
	res, err := subscriptions.FromSource(source, on.svc).Publish(context.Background(), ev)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	key := source + " " + typ + " " + sid
	if want := sid != "" && m.seen[key]; res.Duplicate != want {
		t.Fatalf("event %s from %s with sourceEventId %q: duplicate %t, want %t", typ, source, sid, res.Duplicate, want)
	}
	if res.Duplicate {
		return
	}
	m.seen[key] = true
	for _, ms := range m.subs {
		if ms.status == mcpe.StatusActive && ms.matches(typ) {
			ms.events[res.EventID], ms.last = typ, m.clk.Now()
			t.Logf("event %s (%s) at %s matches %s", res.EventID, typ, m.clk.Now().Format(time.TimeOnly), ms.id)
		}
	}
}

// end returns where principal's inbox ends.
func (m *model) end(t *rapid.T, principal string) int64 {
	latest, err := m.store.LatestInbox(context.Background(), principal, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(latest) == 0 {
		return 0
	}
	return latest[0].Seq
}

// span starts what a session that becomes live now is owed: what follows
// the inbox's end, and the most recent of what is kept.
func (m *model) span(t *rapid.T, principal string) interval {
	kept, err := m.store.PendingEntries(context.Background(), principal, 10)
	if err != nil {
		t.Fatal(err)
	}
	iv := interval{from: m.end(t, principal), to: math.MaxInt64, sure: true}
	for _, e := range kept {
		iv.kept = append(iv.kept, e.Seq)
	}
	return iv
}

// inbox reads principal's whole inbox.
func (m *model) inbox(t *rapid.T, principal string) []subscriptions.InboxEntry {
	var all []subscriptions.InboxEntry
	for after := int64(0); ; {
		es, more, err := m.store.ReadInbox(context.Background(), principal, after, 500)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, es...)
		if !more || len(es) == 0 {
			return all
		}
		after = es[len(es)-1].Seq
	}
}

// owed is what session s is owed of entries: must, and may (from spans
// that ended while its writes could not go).
func (s *modelSession) owed(entries []subscriptions.InboxEntry) (must, may map[int64]bool) {
	must, may = map[int64]bool{}, map[int64]bool{}
	for i, iv := range s.spans {
		set := must
		if !iv.sure || i == len(s.spans)-1 && !s.healthy() {
			set = may
		}
		for _, k := range iv.kept {
			set[k] = true
		}
		for _, e := range entries {
			if e.Seq > iv.from && e.Seq <= iv.to {
				set[e.Seq] = true
			}
		}
	}
	return must, may
}

func (m *model) check(t *rapid.T) {
	ctx := context.Background()
	inboxes := map[string][]subscriptions.InboxEntry{}
	for _, p := range principals {
		inboxes[p] = m.inbox(t, p)
	}
	m.checkInbox(t, inboxes)

	// Sessions: wait until each one that reads is sent what it is owed.
	deadline := time.Now().Add(settleWait)
	for _, s := range m.live {
		must, _ := s.owed(inboxes[s.principal])
		for {
			have := map[int64]bool{}
			replays := 0
			for _, g := range s.sink.received() {
				have[g.cursor] = true
				if g.cursor == 0 {
					replays++
				}
			}
			missing := 0
			for seq := range must {
				if !have[seq] {
					missing++
				}
			}
			if missing == 0 && (!s.healthy() || !s.live || replays >= s.replays) || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i, s := range m.live {
		m.checkSession(t, fmt.Sprintf("session %d of %s", i, s.principal), s, inboxes[s.principal])
	}
	// Once its owner has a live session that reads, nothing is kept.
	for _, p := range principals {
		reads := false
		for _, s := range m.live {
			reads = reads || s.principal == p && s.live && s.healthy()
		}
		if !reads {
			continue
		}
		kept, err := m.store.PendingEntries(ctx, p, 100)
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(settleWait); len(kept) > 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			kept, _ = m.store.PendingEntries(ctx, p, 100)
		}
		if len(kept) > 0 {
			t.Fatalf("%s has a live session, yet %d entries are still kept for it (the first at %d)", p, len(kept), kept[0].Seq)
		}
	}
}

// checkInbox checks that each accepted event is in the inbox once for each
// subscription it matched while active, as an event or in one digest, and
// that each expired subscription has one expiry notice.
func (m *model) checkInbox(t *rapid.T, inboxes map[string][]subscriptions.InboxEntry) {
	ctx := context.Background()
	for _, ms := range m.subs {
		count := map[string]int{}
		expired, folded := 0, 0
		lastOf := map[string]time.Time{} // a throttle group's last notification
		for _, e := range inboxes[ms.principal] {
			if !slices.Contains(e.SubscriptionIDs, ms.id) {
				continue
			}
			switch e.Kind {
			case mcpe.InboxEvent:
				var ev mcpe.Event
				if err := json.Unmarshal(e.Event, &ev); err != nil {
					t.Fatal(err)
				}
				count[ev.ID]++
				if ms.throttle == 0 {
					break
				}
				if prev, ok := lastOf[ev.Type]; ok && e.CreatedAt.Sub(prev) < ms.throttle {
					t.Fatalf("subscription %s, throttled by %v: %s notified at %s and %s", ms.id, ms.throttle, ev.Type, prev.Format(time.TimeOnly), e.CreatedAt.Format(time.TimeOnly))
				}
				lastOf[ev.Type], folded = e.CreatedAt, folded+max(e.Remaining-1, 0)
			case mcpe.InboxBatch:
				for _, raw := range e.Events {
					var ev mcpe.Event
					if err := json.Unmarshal(raw, &ev); err != nil {
						t.Fatal(err)
					}
					count[ev.ID]++
				}
			case mcpe.InboxExpired:
				expired++
			}
		}
		for id, n := range count {
			if _, matched := ms.events[id]; n != 1 || !matched {
				t.Fatalf("subscription %s (%s, %v): event %s is in the inbox %d times; it matched while active: %t", ms.id, ms.channel, ms.patterns, id, n, matched)
			}
		}
		waiting := 0
		if ms.status == mcpe.StatusActive || ms.status == mcpe.StatusPaused {
			sub, err := m.servers[0].svc.Get(ctx, ms.principal, ms.id)
			if err != nil {
				t.Fatalf("subscription %s: %v", ms.id, err)
			}
			if sub.Status != ms.status {
				t.Fatalf("subscription %s is %s; the model has %s", ms.id, sub.Status, ms.status)
			}
			waiting = int(sub.BufferedEvents)
		}
		if ms.throttle > 0 {
			ended := ms.status == mcpe.StatusActive && !ms.wasPaused && !m.clk.Now().Before(ms.last.Add(ms.throttle))
			if n := len(count) + folded; n > len(ms.events) || ended && n != len(ms.events) {
				t.Fatalf("subscription %s, throttled: %d notifications standing for %d events; %d matched (windows ended: %t)", ms.id, len(count), n, len(ms.events), ended)
			}
		} else if ms.status != "" && len(count)+waiting != len(ms.events) {
			t.Fatalf("subscription %s (%s, %v, %s): %d events in the inbox and %d waiting; %d matched while it was active", ms.id, ms.channel, ms.patterns, ms.status, len(count), waiting, len(ms.events))
		}
		if want := ms.status == mcpe.StatusExpired; expired > 1 || want != (expired == 1) {
			t.Fatalf("subscription %s (%s): %d expiry notices; it is %q", ms.id, ms.channel, expired, ms.status)
		}
	}
}

// checkSession checks that s was sent its deliveries in inbox order, none
// twice, all owed to it, and, when it is live and reads, all it is owed.
func (m *model) checkSession(t *rapid.T, name string, s *modelSession, inbox []subscriptions.InboxEntry) {
	if s.sink.decodeErr != nil {
		t.Fatalf("%s: a notification does not decode: %v", name, s.sink.decodeErr)
	}
	bySeq := map[int64]subscriptions.InboxEntry{}
	for _, e := range inbox {
		bySeq[e.Seq] = e
	}
	must, may := s.owed(inbox)
	sent := map[int64]map[string]bool{}
	var last int64
	replays := 0
	for _, g := range s.sink.received() {
		if g.cursor == 0 {
			replays++
			continue
		}
		if g.cursor < last {
			t.Fatalf("%s: sent %s at %d after %d", name, g.method, g.cursor, last)
		}
		last = g.cursor
		e, ok := bySeq[g.cursor]
		if !ok || !slices.Contains(e.SubscriptionIDs, g.sub) {
			t.Fatalf("%s: sent %s for %s at %d, which its inbox does not hold", name, g.method, g.sub, g.cursor)
		}
		if !must[g.cursor] && !may[g.cursor] {
			t.Fatalf("%s: sent the entry at %d, which it was not owed (spans %+v)", name, g.cursor, s.spans)
		}
		if sent[g.cursor] == nil {
			sent[g.cursor] = map[string]bool{}
		}
		if sent[g.cursor][g.sub] {
			t.Fatalf("%s: sent the entry at %d for %s twice", name, g.cursor, g.sub)
		}
		sent[g.cursor][g.sub] = true
	}
	if replays > s.replays {
		t.Fatalf("%s: %d replays sent; %d made", name, replays, s.replays)
	}
	if !s.live || !s.healthy() {
		return
	}
	for seq := range must {
		if len(sent[seq]) != len(bySeq[seq].SubscriptionIDs) {
			t.Fatalf("%s: the entry at %d (%s for %v) was sent for %d of its subscriptions (spans %+v)", name, seq, bySeq[seq].Kind, bySeq[seq].SubscriptionIDs, len(sent[seq]), s.spans)
		}
	}
	if replays != s.replays {
		t.Fatalf("%s: %d replays sent; %d made", name, replays, s.replays)
	}
}
