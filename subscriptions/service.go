package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/mcpe-server/mcpe-server/clock"
)

// Defaults for ServiceOptions.
const (
	DefaultMaxSubscriptions = 100
	DefaultPollLimit        = 50
	MaxPollLimit            = 500
	DefaultPruneInterval    = time.Minute
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
	// Deliverers deliver the events of each channel the server offers;
	// required, with at least realtime.
	Deliverers map[Channel]Deliverer
	// Notifier reaches live sessions, for events/subscription_expired. Nil
	// sends nothing (the inbox still records the expiry).
	Notifier Notifier
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
	// MaxSubscriptions is the most active and paused subscriptions one
	// principal may have; zero means DefaultMaxSubscriptions.
	MaxSubscriptions int
	// Retention bounds inboxes, dedup memory and expired subscriptions; zero
	// fields take DefaultRetention's.
	Retention Retention
	// PruneInterval is how often Retention is applied; zero means
	// DefaultPruneInterval.
	PruneInterval time.Duration
	// EphemeralPrefix names principals that live only as long as one
	// session: at Start, everything owned by a principal with this prefix is
	// deleted. Empty disables it.
	EphemeralPrefix string
}

// Service manages subscriptions and routes published events. It is safe for
// concurrent use. Start it before use and Stop it when done.
type Service struct {
	store      Store
	index      *Index
	deliverers map[Channel]Deliverer
	channels   []Channel
	notifier   Notifier
	clock      clock.Clock
	log        *slog.Logger
	opts       ServiceOptions

	// mu makes the store and the index agree. Changes to subscriptions
	// (and expiry) hold it exclusively; Publish holds it shared from the
	// match to the commit, so an event matched before a pause can never be
	// stored for the paused subscription after the pause returned.
	mu sync.RWMutex

	life        sync.Mutex // guards the fields below
	started     bool
	stopped     bool
	expiryTimer clock.Timer
	pruneTimer  clock.Timer
	wg          sync.WaitGroup
	ctx         context.Context
	cancel      context.CancelFunc
}

// NewService checks opts and returns a Service.
func NewService(opts ServiceOptions) (*Service, error) {
	if opts.Store == nil {
		return nil, errors.New("subscriptions: ServiceOptions.Store is required")
	}
	if opts.Deliverers[ChannelRealtime] == nil {
		return nil, errors.New("subscriptions: ServiceOptions.Deliverers needs a realtime deliverer")
	}
	if opts.MaxSubscriptions < 0 {
		return nil, fmt.Errorf("subscriptions: ServiceOptions.MaxSubscriptions is %d; it must be positive, or zero for the default", opts.MaxSubscriptions)
	}
	if opts.MaxSubscriptions == 0 {
		opts.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.PruneInterval <= 0 {
		opts.PruneInterval = DefaultPruneInterval
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
		store:      opts.Store,
		index:      NewIndex(nil),
		deliverers: opts.Deliverers,
		notifier:   opts.Notifier,
		clock:      opts.Clock,
		log:        opts.Logger,
		opts:       opts,
	}
	for _, c := range []Channel{ChannelRealtime, ChannelCron, ChannelScheduled} {
		if opts.Deliverers[c] != nil {
			s.channels = append(s.channels, c)
		}
	}
	return s, nil
}

// Capability is the MCPE events capability a server advertises.
type Capability struct {
	MaxSubscriptions int       `json:"maxSubscriptions"`
	DeliveryChannels []Channel `json:"deliveryChannels"`
	Features         Features  `json:"features"`
}

// Features are the optional MCPE features a server supports.
type Features struct {
	Pause             bool `json:"pause"`
	Wildcards         bool `json:"wildcards"`
	CronSchedule      bool `json:"cronSchedule"`
	ScheduledDelivery bool `json:"scheduledDelivery"`
}

// Capability describes what this service supports.
func (s *Service) Capability() Capability {
	return Capability{
		MaxSubscriptions: s.opts.MaxSubscriptions,
		DeliveryChannels: slices.Clone(s.channels),
		Features: Features{
			Pause:             true,
			Wildcards:         true,
			CronSchedule:      slices.Contains(s.channels, ChannelCron),
			ScheduledDelivery: slices.Contains(s.channels, ChannelScheduled),
		},
	}
}

// Retention returns the retention limits in force.
func (s *Service) Retention() Retention { return s.opts.Retention }

// Channels returns the delivery channels the service offers.
func (s *Service) Channels() []Channel { return slices.Clone(s.channels) }

// Start loads the active subscriptions into the index, expires those that
// passed their time while the server was down, applies retention, and starts
// the expiry and retention timers.
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
		n, err := s.store.DeletePrincipalsWithPrefix(ctx, p)
		if err != nil {
			return fmt.Errorf("delete session-scoped subscriptions: %w", err)
		}
		if n > 0 {
			s.log.Info("deleted subscriptions of sessions that ended with the previous run", "count", n)
		}
	}
	subs, err := s.store.ListSubscriptions(ctx, ListQuery{Status: StatusActive})
	if err != nil {
		return fmt.Errorf("load subscriptions: %w", err)
	}
	for _, sub := range subs {
		e, err := NewEntry(sub)
		if err != nil {
			s.log.Error("stored subscription has a filter this version rejects; it receives nothing until updated",
				"subscription_id", sub.ID, "error", err)
			continue
		}
		s.index.Put(e)
	}
	s.log.Info("subscriptions loaded", "active", s.index.Len())
	s.expireDue()
	s.prune()
	return nil
}

// Stop stops the timers and waits for running work. It is safe to call more
// than once.
func (s *Service) Stop() {
	s.life.Lock()
	s.stopped = true
	if s.expiryTimer != nil {
		s.expiryTimer.Stop()
	}
	if s.pruneTimer != nil {
		s.pruneTimer.Stop()
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.life.Unlock()
	s.wg.Wait()
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

func (s *Service) bg() context.Context {
	s.life.Lock()
	defer s.life.Unlock()
	if s.ctx == nil {
		return context.Background()
	}
	return s.ctx
}

// Subscribe creates a subscription for principal.
func (s *Service) Subscribe(ctx context.Context, principal string, req SubscribeRequest) (*Subscription, error) {
	now := s.clock.Now().UTC()
	sub := &Subscription{
		ID:        uuid.NewString(),
		Principal: principal,
		Status:    StatusActive,
		Filter:    req.Filter,
		CreatedAt: now,
		UpdatedAt: now,
	}
	if req.Delivery != nil {
		sub.Delivery = *req.Delivery
	} else {
		sub.Delivery = DefaultDelivery()
	}
	if err := sub.Delivery.validate(s.channels); err != nil {
		return nil, err
	}
	if req.ExpiresAt != "" {
		t, err := parseFutureTime("expiresAt", req.ExpiresAt, now)
		if err != nil {
			return nil, err
		}
		sub.ExpiresAt = &t
	}
	e, err := NewEntry(sub)
	if err != nil {
		return nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.store.CreateSubscription(ctx, sub, s.opts.MaxSubscriptions); err != nil {
		return nil, err
	}
	s.index.Put(e)
	if sub.ExpiresAt != nil {
		s.armExpiry()
	}
	return sub, nil
}

// Unsubscribe deletes a subscription of principal.
func (s *Service) Unsubscribe(ctx context.Context, principal, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.store.DeleteSubscription(ctx, principal, id); err != nil {
		return notFound(err, id)
	}
	s.index.Remove(id)
	return nil
}

// Get returns a subscription of principal.
func (s *Service) Get(ctx context.Context, principal, id string) (*Subscription, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	sub, err := s.store.GetSubscription(ctx, principal, id)
	return sub, notFound(err, id)
}

// List returns principal's subscriptions, all or those with one status.
func (s *Service) List(ctx context.Context, principal string, status Status) ([]*Subscription, error) {
	if status != "" && !status.Valid() {
		return nil, invalid("status", "%q is not a status; use \"active\", \"paused\" or \"expired\", or leave it out to list all", status)
	}
	subs, err := s.store.ListSubscriptions(ctx, ListQuery{Principal: principal, Status: status})
	if subs == nil {
		subs = []*Subscription{}
	}
	return subs, err
}

// Pause stops deliveries to a subscription until it is resumed. Events that
// arrive meanwhile are not delivered to it, now or later.
func (s *Service) Pause(ctx context.Context, principal, id string) (*Subscription, error) {
	return s.change(ctx, principal, id, func(sub *Subscription) error {
		sub.Status = StatusPaused
		return nil
	})
}

// Resume restarts deliveries to a paused subscription.
func (s *Service) Resume(ctx context.Context, principal, id string) (*Subscription, error) {
	return s.change(ctx, principal, id, func(sub *Subscription) error {
		sub.Status = StatusActive
		return nil
	})
}

// Update changes the filter, delivery or expiry of a subscription of
// principal. A paused subscription stays paused.
func (s *Service) Update(ctx context.Context, principal string, req UpdateRequest) (*Subscription, error) {
	if req.Filter == nil && req.Delivery == nil && !req.ExpiresAt.Set {
		return nil, invalid("", "nothing to update: give at least one of filter, delivery or expiresAt")
	}
	now := s.clock.Now().UTC()
	var expiresAt *time.Time
	if req.ExpiresAt.Set && req.ExpiresAt.Value != "" {
		t, err := parseFutureTime("expiresAt", req.ExpiresAt.Value, now)
		if err != nil {
			return nil, err
		}
		expiresAt = &t
	}
	if req.Filter != nil {
		if _, err := req.Filter.Compile(); err != nil {
			return nil, err
		}
	}
	if req.Delivery != nil {
		if err := req.Delivery.validate(s.channels); err != nil {
			return nil, err
		}
	}
	return s.change(ctx, principal, req.SubscriptionID, func(sub *Subscription) error {
		if req.Filter != nil {
			sub.Filter = *req.Filter
		}
		if req.Delivery != nil {
			sub.Delivery = *req.Delivery
		}
		if req.ExpiresAt.Set {
			sub.ExpiresAt = expiresAt
		}
		return nil
	})
}

// change applies edit to a subscription that has not expired, stores it and
// brings the index and the expiry timer up to date.
func (s *Service) change(ctx context.Context, principal, id string, edit func(*Subscription) error) (*Subscription, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, err := s.store.GetSubscription(ctx, principal, id)
	if err != nil {
		return nil, notFound(err, id)
	}
	now := s.clock.Now().UTC()
	if sub.Status == StatusExpired || sub.ExpiresAt != nil && !sub.ExpiresAt.After(now) {
		return nil, fmt.Errorf("%w: subscription %q expired; create a new one with events_subscribe", ErrExpired, id)
	}
	before := sub.Clone()
	if err := edit(sub); err != nil {
		return nil, err
	}
	if sameSettings(before, sub) {
		return sub, nil
	}
	sub.UpdatedAt = now
	var entry *Entry
	if sub.Status == StatusActive {
		if entry, err = NewEntry(sub); err != nil {
			return nil, err
		}
	}
	if err := s.store.UpdateSubscription(ctx, sub); err != nil {
		return nil, notFound(err, id)
	}
	if entry != nil {
		s.index.Put(entry)
	} else {
		s.index.Remove(id)
	}
	if !timePtrEqual(before.ExpiresAt, sub.ExpiresAt) {
		s.armExpiry()
	}
	return sub, nil
}

func sameSettings(a, b *Subscription) bool {
	aj, _ := json.Marshal([]any{a.Status, a.Filter, a.Delivery})
	bj, _ := json.Marshal([]any{b.Status, b.Filter, b.Delivery})
	return string(aj) == string(bj) && timePtrEqual(a.ExpiresAt, b.ExpiresAt)
}

func timePtrEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func notFound(err error, id string) error {
	if errors.Is(err, ErrNotFound) {
		return &NotFoundError{ID: id}
	}
	return err
}

// Publish validates ev, stores it and delivers it to every matching active
// subscription. It implements the ingest path shared by POST /v1/events and
// the adapters. An event accepted before (same ID, or same type and
// sourceEventId) is reported as a duplicate and not routed again.
func (s *Service) Publish(ctx context.Context, ev Event) (PublishResult, error) {
	now := s.clock.Now()
	if err := ev.Normalize(now); err != nil {
		return PublishResult{}, err
	}
	raw, err := json.Marshal(&ev)
	if err != nil {
		return PublishResult{}, fmt.Errorf("encode event: %w", err)
	}
	s.mu.RLock()
	matches := s.index.Match(&ev)
	targets := make([]Target, 0, len(matches))
	for _, e := range matches {
		for _, c := range e.Delivery.Channels {
			targets = append(targets, Target{SubscriptionID: e.ID, Principal: e.Principal, Channel: c})
		}
	}
	res, err := s.store.Publish(ctx, &ev, raw, targets, now)
	s.mu.RUnlock()
	if err != nil {
		return PublishResult{}, fmt.Errorf("store event: %w", err)
	}
	if !res.Duplicate && len(res.Delivered) > 0 {
		s.deliverers[ChannelRealtime].Deliver(res.Delivered)
	}
	return res, nil
}

// Poll returns what was delivered to principal after a cursor.
func (s *Service) Poll(ctx context.Context, principal string, req PollRequest) (PollResult, error) {
	limit := req.Limit
	switch {
	case limit == 0:
		limit = DefaultPollLimit
	case limit < 0 || limit > MaxPollLimit:
		return PollResult{}, invalid("limit", "is %d; give a number from 1 to %d, or leave it out for %d", limit, MaxPollLimit, DefaultPollLimit)
	}
	var after int64
	var err error
	if req.Cursor != "" {
		if after, err = ParseCursor(req.Cursor); err != nil {
			return PollResult{}, err
		}
	} else if after, err = s.store.PollCursor(ctx, principal); err != nil {
		return PollResult{}, err
	}
	entries, more, err := s.store.ReadInbox(ctx, principal, after, limit)
	if err != nil {
		return PollResult{}, err
	}
	res := PollResult{Items: make([]PollItem, 0, len(entries)), HasMore: more}
	next := after
	for _, e := range entries {
		res.Items = append(res.Items, PollItem{
			Cursor:          FormatCursor(e.Seq),
			Kind:            e.Kind,
			SubscriptionIDs: e.SubscriptionIDs,
			Event:           e.Event,
			DeliveredAt:     e.CreatedAt,
		})
		next = e.Seq
	}
	res.NextCursor = FormatCursor(next)
	if err := s.store.SetPollCursor(ctx, principal, next); err != nil {
		return PollResult{}, err
	}
	return res, nil
}

// ForgetPrincipal deletes everything principal owns; it is used when a
// session-scoped principal's session ends.
func (s *Service) ForgetPrincipal(ctx context.Context, principal string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	subs, err := s.store.ListSubscriptions(ctx, ListQuery{Principal: principal})
	if err != nil {
		return err
	}
	if err := s.store.DeletePrincipal(ctx, principal); err != nil {
		return err
	}
	for _, sub := range subs {
		s.index.Remove(sub.ID)
	}
	return nil
}

// armExpiry sets the expiry timer to the earliest expiresAt.
func (s *Service) armExpiry() {
	next, ok, err := s.store.NextExpiry(s.bg())
	if err != nil {
		s.log.Error("find next expiry", "error", err)
		return
	}
	s.life.Lock()
	if s.expiryTimer != nil {
		s.expiryTimer.Stop()
		s.expiryTimer = nil
	}
	s.life.Unlock()
	if !ok {
		return
	}
	d := max(next.Sub(s.clock.Now()), 0)
	t := s.after(d, s.expireDue)
	s.life.Lock()
	s.expiryTimer = t
	s.life.Unlock()
}

// expireDue expires the subscriptions whose time has come, tells their
// owners, and re-arms the timer.
func (s *Service) expireDue() {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx := s.bg()
	entries, err := s.store.ExpireSubscriptions(ctx, s.clock.Now())
	if err != nil {
		s.log.Error("expire subscriptions", "error", err)
	}
	for _, e := range entries {
		for _, id := range e.SubscriptionIDs {
			s.index.Remove(id)
			s.log.Info("subscription expired", "subscription_id", id)
			if s.notifier != nil {
				s.notifier.Notify(e.Principal, Notification{
					Method: MethodSubscriptionExpired,
					Params: ExpiredParams{SubscriptionID: id, Cursor: FormatCursor(e.Seq)},
				})
			}
		}
	}
	s.armExpiry()
}

// prune applies the retention limits and schedules the next run.
func (s *Service) prune() {
	st, err := s.store.Prune(s.bg(), s.opts.Retention, s.clock.Now())
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
