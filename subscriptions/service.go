package subscriptions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Defaults for ServiceOptions.
const (
	DefaultMaxSubscriptions = 100
	// DefaultMaxPatternCost bounds the summed mcpe.Pattern.Cost of one
	// principal's active subscriptions: about 2 000 patterns such as
	// "github.*", and far fewer of the kind that is slow to match.
	DefaultMaxPatternCost = 4096
	DefaultPruneInterval  = time.Minute
	// SecretGrace is how long a rotated webhook secret keeps signing
	// besides the new one.
	SecretGrace = 24 * time.Hour
)

// DefaultRetention is the retention used for zero fields of
// ServiceOptions.Retention.
var DefaultRetention = Retention{
	InboxMaxEntries: 1000,
	InboxMaxAge:     7 * 24 * time.Hour,
	DedupWindow:     24 * time.Hour,
	ExpiredMaxAge:   7 * 24 * time.Hour,
}

// ServiceOptions configure a Service.
type ServiceOptions struct {
	// Store keeps everything; required.
	Store Store
	// Deliverer sends inbox entries to their owners' live sessions as
	// notifications (delivery/realtime); required.
	Deliverer Deliverer
	// Presence tells whether an owner has a live session (for Replay).
	// When set, digests are kept (marked pending) until a session of their
	// owner is sent them, as expiry notices always are: Presence's
	// sessions send what was kept when they become live.
	Presence Presence
	// Backlog, when set, keeps what live sessions have not been sent from
	// retention, and refuses events for an owner whose session is owed as
	// much as it may be (ErrBusy). Nil keeps neither.
	Backlog Backlog
	// Timings are the buffered channels offered besides realtime, by name
	// (delivery/cron, delivery/scheduled). Nil offers realtime only.
	Timings map[mcpe.Channel]Timing
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
	// MaxSubscriptions is the most active and paused subscriptions one
	// principal may have; zero means DefaultMaxSubscriptions.
	MaxSubscriptions int
	// MaxPatternCost bounds what matching one principal's active
	// subscriptions against a new event type may cost: the sum of their
	// patterns' mcpe.Pattern.Cost. Zero means DefaultMaxPatternCost.
	MaxPatternCost int
	// Retention bounds inboxes, dedup memory and expired subscriptions; zero
	// fields take DefaultRetention's.
	Retention Retention
	// PruneInterval is how often Retention is applied; zero means
	// DefaultPruneInterval.
	PruneInterval time.Duration
	// Handlers run subscriptions' handlers, by type (handlers/*). Nil
	// offers none: a subscription with a handler is refused.
	Handlers map[mcpe.HandlerType]Handler
	// JobsWritten, when set, is called after deliveries were recorded, so
	// that the handler runner looks for new jobs. It must not block.
	JobsWritten func()
	// EphemeralPrefix names principals that live only as long as one
	// session: at Start, everything owned by a principal with this prefix is
	// deleted, unless the store was opened beside other processes
	// (Companions), whose live sessions may own some. Those of this run's
	// sessions start with RunPrefix(). On a store that implements Runs, the
	// run is marked there every DefaultMarkInterval, and what a run that
	// stopped marking for DefaultMarkLapse owned is deleted by another.
	// Empty disables it.
	EphemeralPrefix string
	// markInterval and markLapse, set only by tests, replace
	// DefaultMarkInterval and DefaultMarkLapse when not zero.
	markInterval, markLapse time.Duration
	// RunLost is called when this run finds that another server took it
	// as ended (no mark of it reached the store for DefaultMarkLapse) and
	// deleted what its ephemeral principals owned: it should end their
	// sessions, whose clients then start new ones. Nil only logs it.
	RunLost func()
	// Managed are the ID prefixes of subscriptions another interface owns
	// (the SEP-3415 events extension's keyed subscriptions): Update
	// refuses them, since that interface keys them on what they are for
	// and verified where they deliver; pause, resume and unsubscribe work.
	Managed []ManagedPrefix
	// Observer hears of store writes and digest fires, for metrics; nil
	// hears nothing.
	Observer Observer
}

// Service manages subscriptions, routes published events, and records the
// fires of cron and scheduled subscriptions when their schedulers call
// FireDue. It is safe for concurrent use.
// Start it before use and Stop it when done.
type Service struct {
	store     Store
	index     *Index
	deliverer Deliverer
	timings   map[mcpe.Channel]Timing
	channels  []mcpe.Channel
	// handlerTypes are the handler types offered, in a fixed order.
	handlerTypes []mcpe.HandlerType
	clock        clock.Clock
	log          *slog.Logger
	opts         ServiceOptions

	// manage serializes the changes to subscriptions, expiry and fires,
	// each across its store writes. Publishing never takes it.
	manage sync.Mutex
	// route makes routing and the index agree: a publish batch holds it
	// shared from its check of stale matches to its commit, and a change
	// to the index holds it exclusively (only for the change itself), so a
	// subscription changed or paused is never routed by its old state once
	// the change has returned.
	route sync.RWMutex
	// commit keeps deliveries in the order of their commits: every store
	// write that records deliveries holds it until its entries are handed
	// to the Deliverer. The store serializes those writes anyway; this
	// only adds the hand-over.
	commit sync.Mutex
	// routed is the store's count of subscriptions that stopped being
	// active that the index reflects (routedDeactivations).
	routed atomic.Int64
	// batch gathers concurrent publications into group commits.
	batch batcher
	// watchers hear of changes to the schedules of buffered channels.
	watchers scheduleWatchers
	// follow follows the writes of other processes sharing the store; nil
	// when the store is not shared.
	follow *follower
	// run names this process's run; runs is the store, when it marks runs
	// (nil without ephemeral principals); marked is whether a mark of run
	// went in (only markRun, which runs one at a time, uses it).
	run    string
	runs   Runs
	marked bool
	// arming is held across armExpiry's read of the store and its timer
	// change: of two arms, the one that read last sets the timer.
	arming sync.Mutex

	life        sync.Mutex // guards the fields below
	started     bool
	stopped     bool
	expiryTimer clock.Timer
	pruneTimer  clock.Timer
	markTimer   clock.Timer
	wg          sync.WaitGroup
	ctx         context.Context
	cancel      context.CancelFunc
}

// NewService checks opts and returns a Service.
func NewService(opts ServiceOptions) (*Service, error) {
	if opts.Store == nil {
		return nil, errors.New("subscriptions: ServiceOptions.Store is required")
	}
	if opts.Deliverer == nil {
		return nil, errors.New("subscriptions: ServiceOptions.Deliverer is required")
	}
	for c := range opts.Timings {
		if c != mcpe.ChannelCron && c != mcpe.ChannelScheduled {
			return nil, fmt.Errorf("subscriptions: ServiceOptions.Timings has %q; only %q and %q are buffered channels", c, mcpe.ChannelCron, mcpe.ChannelScheduled)
		}
	}
	if opts.MaxSubscriptions < 0 {
		return nil, fmt.Errorf("subscriptions: ServiceOptions.MaxSubscriptions is %d; it must be positive, or zero for the default", opts.MaxSubscriptions)
	}
	opts.MaxSubscriptions = cmp.Or(opts.MaxSubscriptions, DefaultMaxSubscriptions)
	if opts.MaxPatternCost < 0 {
		return nil, fmt.Errorf("subscriptions: ServiceOptions.MaxPatternCost is %d; it must be positive, or zero for the default", opts.MaxPatternCost)
	}
	opts.MaxPatternCost = cmp.Or(opts.MaxPatternCost, DefaultMaxPatternCost)
	opts.Clock = cmp.Or[clock.Clock](opts.Clock, clock.Real{})
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	if opts.PruneInterval <= 0 {
		opts.PruneInterval = DefaultPruneInterval
	}
	opts.markInterval = cmp.Or(opts.markInterval, DefaultMarkInterval)
	opts.markLapse = cmp.Or(opts.markLapse, max(DefaultMarkLapse, 2*opts.markInterval))
	if opts.markInterval < 0 || opts.markLapse < 2*opts.markInterval {
		return nil, fmt.Errorf("subscriptions: ServiceOptions.markInterval %v and markLapse %v: the interval must be positive and the lapse at least twice it (zero for %v and %v)",
			opts.markInterval, opts.markLapse, DefaultMarkInterval, DefaultMarkLapse)
	}
	for t, h := range opts.Handlers {
		if h == nil {
			return nil, fmt.Errorf("subscriptions: ServiceOptions.Handlers[%q] is nil", t)
		}
		if t != mcpe.HandlerBash && t != mcpe.HandlerWebhook && t != mcpe.HandlerAgent {
			return nil, fmt.Errorf("subscriptions: ServiceOptions.Handlers has %q; the handler types are %q, %q and %q", t, mcpe.HandlerBash, mcpe.HandlerWebhook, mcpe.HandlerAgent)
		}
	}
	r := &opts.Retention
	if r.InboxMaxEntries <= 0 {
		r.InboxMaxEntries = DefaultRetention.InboxMaxEntries
	}
	if r.InboxMaxAge <= 0 {
		r.InboxMaxAge = DefaultRetention.InboxMaxAge
	}
	if r.DedupWindow <= 0 {
		r.DedupWindow = DefaultRetention.DedupWindow
	}
	if r.ExpiredMaxAge <= 0 {
		r.ExpiredMaxAge = DefaultRetention.ExpiredMaxAge
	}
	s := &Service{
		store:     opts.Store,
		index:     NewIndex(nil),
		deliverer: opts.Deliverer,
		timings:   opts.Timings,
		channels:  []mcpe.Channel{mcpe.ChannelRealtime},
		clock:     opts.Clock,
		log:       opts.Logger,
		opts:      opts,
		follow:    newFollower(opts.Store, opts.Deliverer),
		run:       newRun(),
	}
	s.batch.yield = runtime.Gosched
	if r, ok := opts.Store.(Runs); ok && opts.EphemeralPrefix != "" {
		s.runs = r
	}
	for _, c := range []mcpe.Channel{mcpe.ChannelCron, mcpe.ChannelScheduled} {
		if opts.Timings[c] != nil {
			s.channels = append(s.channels, c)
		}
	}
	for _, t := range []mcpe.HandlerType{mcpe.HandlerBash, mcpe.HandlerWebhook, mcpe.HandlerAgent} {
		if opts.Handlers[t] != nil {
			s.handlerTypes = append(s.handlerTypes, t)
		}
	}
	return s, nil
}

// Capability describes what this service supports.
func (s *Service) Capability() mcpe.Capability {
	return mcpe.Capability{
		MaxSubscriptions: s.opts.MaxSubscriptions,
		DeliveryChannels: slices.Clone(s.channels),
		Features: mcpe.Features{
			Pause:             true,
			Wildcards:         true,
			CronSchedule:      s.timings[mcpe.ChannelCron] != nil,
			ScheduledDelivery: s.timings[mcpe.ChannelScheduled] != nil,
		},
		Handlers: append([]mcpe.HandlerType{}, s.handlerTypes...),
	}
}

// Retention returns the retention limits in force.
func (s *Service) Retention() Retention { return s.opts.Retention }

// Start loads the active subscriptions into the index, expires those that
// passed their time while the server was down, applies retention, marks
// the run (Runs), and starts the expiry, retention and mark timers. The digests of cron and scheduled
// subscriptions are fired by the schedulers of package delivery, started
// after it.
func (s *Service) Start(ctx context.Context) error {
	s.life.Lock()
	if s.started {
		s.life.Unlock()
		return errors.New("subscriptions: Service already started")
	}
	s.started = true
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.life.Unlock()

	if p := s.opts.EphemeralPrefix; p != "" {
		beside := false
		if c, ok := s.store.(Companions); ok {
			var err error
			if beside, err = c.OpenedBeside(); err != nil {
				s.log.Warn("could not tell whether other servers use the store; assuming they do", "error", err, "lapse", s.opts.markLapse,
					"effect", "what sessions without a token of earlier runs left is deleted once their marks lapse, not now")
			}
		}
		if beside {
			s.log.Info("kept the subscriptions of other servers' sessions without a token", "lapse", s.opts.markLapse,
				"reason", "they use the store too", "effect", "those of a server that ended without deleting them go once its marks lapse")
		} else {
			n, err := s.store.DeletePrincipalsWithPrefix(ctx, p)
			if err != nil {
				return fmt.Errorf("delete session-scoped subscriptions: %w", err)
			}
			if n > 0 {
				s.log.Info("deleted subscriptions of sessions that ended with the previous run", "count", n)
			}
		}
	}
	// Read before the index is loaded: what stops or changes later is
	// counted after it.
	if err := s.startFollowing(ctx); err != nil {
		return fmt.Errorf("read the store's change log: %w", err)
	}
	s.routedDeactivations(ctx)
	subs, err := s.store.ListSubscriptions(ctx, ListQuery{Status: mcpe.StatusActive})
	if err != nil {
		return fmt.Errorf("load subscriptions: %w", err)
	}
	for _, sub := range subs {
		e, err := NewEntry(sub)
		if err != nil {
			s.log.Error("stored subscription has a filter this version rejects",
				"subscription_id", sub.ID, "error", err, "effect", "it receives no new events until updated")
			continue
		}
		s.putEntry(e)
	}
	s.log.Info("subscriptions loaded", "active", s.index.Len())
	s.expireDue()
	s.prune()
	if s.runs != nil {
		s.markRun()
	}
	s.runFollowing()
	return nil
}

// Stop stops the timers and waits for running work. It is safe to call more
// than once.
func (s *Service) Stop() {
	s.life.Lock()
	ending := s.started && !s.stopped
	s.stopped = true
	for _, t := range []clock.Timer{s.expiryTimer, s.pruneTimer, s.markTimer} {
		if t != nil {
			t.Stop()
		}
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.life.Unlock()
	s.stopFollowing()
	s.wg.Wait()
	if ending {
		s.endRun()
	}
}

// after runs f once d has passed, unless the service is stopping; it returns
// nil when stopping.
func (s *Service) after(d time.Duration, f func()) clock.Timer {
	s.life.Lock()
	defer s.life.Unlock()
	if s.stopped {
		return nil
	}
	return s.clock.AfterFunc(d, func() {
		s.life.Lock()
		if s.stopped {
			s.life.Unlock()
			return
		}
		s.wg.Add(1)
		s.life.Unlock()
		defer s.wg.Done()
		f()
	})
}

// rearm replaces *slot with a timer running f at t, or with none when t is
// zero.
func (s *Service) rearm(slot *clock.Timer, t time.Time, f func()) {
	s.life.Lock()
	if *slot != nil {
		(*slot).Stop()
		*slot = nil
	}
	s.life.Unlock()
	if t.IsZero() {
		return
	}
	timer := s.after(max(t.Sub(s.clock.Now()), 0), f)
	s.life.Lock()
	*slot = timer
	s.life.Unlock()
}

func (s *Service) bg() context.Context {
	s.life.Lock()
	defer s.life.Unlock()
	if s.ctx == nil {
		return context.Background()
	}
	return s.ctx
}

// armExpiry sets the expiry timer to the earliest expiresAt.
func (s *Service) armExpiry() {
	s.arming.Lock()
	defer s.arming.Unlock()
	next, ok, err := s.store.NextExpiry(s.bg())
	if err != nil {
		s.log.Error("find next expiry", "error", err)
		return
	}
	if !ok {
		next = time.Time{}
	}
	s.rearm(&s.expiryTimer, next, s.expireDue)
}

// expireDue expires the subscriptions whose time has come, delivers what
// their buffers still held and the expiry notices, and re-arms the timer.
func (s *Service) expireDue() {
	s.manage.Lock()
	s.commit.Lock()
	entries, err := s.store.ExpireSubscriptions(s.bg(), s.clock.Now())
	if err != nil {
		s.log.Error("expire subscriptions", "error", err)
	}
	s.handOver(s.bg(), entries, entries)
	s.commit.Unlock()
	for _, e := range entries {
		if e.Kind != mcpe.InboxExpired {
			continue
		}
		for _, id := range e.SubscriptionIDs {
			s.removeEntry(id)
			s.log.Info("subscription expired", "subscription_id", id)
		}
	}
	if len(entries) > 0 {
		s.routedDeactivations(s.bg())
	}
	s.manage.Unlock()
	if len(entries) > 0 {
		s.jobsWritten()
	}
	s.armExpiry()
}

// routedDeactivations records the store's count of subscriptions that
// stopped being active, once the index has left them out: a publish routed
// by the index from then on tells the store so (PublishBatch), and the
// store need not look its targets' status up. The caller holds s.manage,
// which every change that stops a subscription takes, so no such change is
// counted before the index reflects it. An error leaves the older count:
// the store then looks the status up. On a shared store, other processes
// stop subscriptions too: the index first catches up with every change.
func (s *Service) routedDeactivations(ctx context.Context) {
	if s.follow != nil {
		s.followChangesLocked(ctx)
		return
	}
	n, err := s.store.Deactivations(ctx)
	if err != nil {
		s.log.Warn("read the count of stopped subscriptions", "error", err)
		return
	}
	s.routed.Store(n)
}

// putEntry adds e to the index, replacing its older version.
func (s *Service) putEntry(e *Entry) {
	s.route.Lock()
	defer s.route.Unlock()
	s.index.Put(e)
}

// removeEntry takes subscription id out of the index.
func (s *Service) removeEntry(id string) {
	s.route.Lock()
	defer s.route.Unlock()
	s.index.Remove(id)
}

// jobsWritten tells the handler runner that deliveries were recorded.
func (s *Service) jobsWritten() {
	if s.opts.JobsWritten != nil && len(s.handlerTypes) > 0 {
		s.opts.JobsWritten()
	}
}

// prune applies the retention limits and schedules the next run.
func (s *Service) prune() {
	r := s.opts.Retention
	if s.opts.Backlog != nil {
		r.Keep = s.opts.Backlog.Cursors()
	}
	st, err := s.store.Prune(s.bg(), r, s.clock.Now())
	if err != nil {
		s.log.Error("apply retention", "error", err)
	} else if st != (PruneStats{}) {
		s.log.Debug("retention applied", "inbox_entries", st.InboxEntries, "events", st.Events, "subscriptions", st.Subscriptions)
	}
	t := s.after(s.opts.PruneInterval, s.prune)
	s.life.Lock()
	s.pruneTimer = t
	s.life.Unlock()
}

// ManagedPrefix is one prefix of Options.Managed, with what to tell a
// caller of Update.
type ManagedPrefix struct {
	Prefix string
	// Owner says where the subscription is changed instead, such as
	// "events/subscribe (SEP-3415 webhook delivery)".
	Owner string
}
