// Package catalog tells a model what it may subscribe to: the event sources
// (adapters) and whether the operator set them up, the event types each
// emits with a JSON Schema of their data and an example, the state of
// upstream MCP servers, and the types recently posted to POST /v1/events.
// The events_catalog tool and the events://catalog resource both read it.
package catalog

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Defaults for Options.
const (
	DefaultSeenWindow = 24 * time.Hour
	DefaultSeenLimit  = 500
)

// Source is one source of events the catalog lists.
type Source struct {
	// Name is the source's name, such as "github".
	Name string
	// Description says what the source is, in one line.
	Description string
	// Endpoint is where it receives webhooks, if it does.
	Endpoint string
	// Types lists what it emits; nil when it is not configured.
	Types func() []mcpe.EventType
	// States reports its upstreams' states, for sources that connect out.
	States func() []mcpe.SourceState
	// Configured is false for a known source the operator has not set up.
	Configured bool
}

// Options configure a Catalog.
type Options struct {
	// Sources are the known sources, configured or not.
	Sources []Source
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// SeenWindow is how long a type posted to /v1/events stays listed;
	// zero means DefaultSeenWindow.
	SeenWindow time.Duration
	// SeenLimit bounds the types remembered, and a quarter of it those
	// of one source (a type's first segment); past it a new type is not
	// listed until some age out. Zero means DefaultSeenLimit.
	SeenLimit int
}

// Catalog is the event catalog. It is safe for concurrent use.
type Catalog struct {
	opts Options

	mu   sync.Mutex
	seen map[string]*mcpe.SeenType
	// watchers are called when the set of seen types changes; expiry is
	// armed for the oldest seen type while there is one.
	watchers map[int]func()
	nextID   int
	expiry   clock.Timer
}

// New returns a Catalog.
func New(opts Options) *Catalog {
	opts.Clock = cmp.Or[clock.Clock](opts.Clock, clock.Real{})
	if opts.SeenWindow <= 0 {
		opts.SeenWindow = DefaultSeenWindow
	}
	if opts.SeenLimit <= 0 {
		opts.SeenLimit = DefaultSeenLimit
	}
	return &Catalog{opts: opts, seen: make(map[string]*mcpe.SeenType)}
}

// Observe records that an event of type t was accepted on /v1/events.
func (c *Catalog) Observe(t string) {
	now := c.opts.Clock.Now().UTC()
	c.mu.Lock()
	if s := c.seen[t]; s != nil {
		s.Count++
		s.LastSeenAt = now
		c.mu.Unlock()
		return
	}
	if !c.roomLocked(t, now) {
		c.mu.Unlock()
		return
	}
	c.seen[t] = &mcpe.SeenType{Type: t, Count: 1, LastSeenAt: now}
	c.armLocked(now)
	watchers := c.watchersLocked()
	c.mu.Unlock()
	notify(watchers)
}

// Watch calls f, in a goroutine of the caller's or a timer's, whenever the
// set of types the catalog lists may have changed: a type posted to
// /v1/events for the first time within the window, or one that aged out
// of it. The sources' own types are fixed while the server
// runs. Stop ends the calls.
func (c *Catalog) Watch(f func()) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watchers == nil {
		c.watchers = make(map[int]func())
	}
	id := c.nextID
	c.nextID++
	c.watchers[id] = f
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.watchers, id)
	}
}

func (c *Catalog) watchersLocked() []func() {
	out := make([]func(), 0, len(c.watchers))
	for _, f := range c.watchers {
		out = append(out, f)
	}
	return out
}

func notify(watchers []func()) {
	for _, f := range watchers {
		f()
	}
}

// armLocked makes sure a timer is due when the oldest seen type leaves
// the window.
func (c *Catalog) armLocked(now time.Time) {
	if c.expiry != nil || len(c.seen) == 0 {
		return
	}
	oldest := now
	for _, s := range c.seen {
		if s.LastSeenAt.Before(oldest) {
			oldest = s.LastSeenAt
		}
	}
	// Past the window by a hair: Get keeps a type seen exactly a window
	// ago.
	c.expiry = c.opts.Clock.AfterFunc(oldest.Add(c.opts.SeenWindow).Sub(now)+time.Millisecond, c.expire)
}

// expire drops the types that left the window and tells the watchers.
func (c *Catalog) expire() {
	now := c.opts.Clock.Now().UTC()
	c.mu.Lock()
	c.expiry = nil
	dropped := false
	for t, s := range c.seen {
		if now.Sub(s.LastSeenAt) > c.opts.SeenWindow {
			delete(c.seen, t)
			dropped = true
		}
	}
	c.armLocked(now)
	var watchers []func()
	if dropped {
		watchers = c.watchersLocked()
	}
	c.mu.Unlock()
	notify(watchers)
}

// roomLocked reports whether a new type t may be listed at now: not while
// SeenLimit types are, or a quarter as many of its source (its first
// segment, "deploy" of "deploy.failed"). A listed type is never pushed out
// by a new one, so that a flood of new types leaves those seen before
// listed until they age out (expire drops them).
func (c *Catalog) roomLocked(t string, now time.Time) bool {
	source, _, _ := strings.Cut(t, ".")
	all, same := 0, 0
	for typ, s := range c.seen {
		if now.Sub(s.LastSeenAt) <= c.opts.SeenWindow {
			all++
			if src, _, _ := strings.Cut(typ, "."); src == source {
				same++
			}
		}
	}
	return all < c.opts.SeenLimit && same < max(1, c.opts.SeenLimit/4)
}

// Publisher wraps p so that the types it accepts are recorded as seen.
func (c *Catalog) Publisher(p subscriptions.Publisher) subscriptions.Publisher {
	return observer{p: p, c: c}
}

type observer struct {
	p subscriptions.Publisher
	c *Catalog
}

func (o observer) Publish(ctx context.Context, ev mcpe.Event) (subscriptions.PublishResult, error) {
	res, err := o.p.Publish(ctx, ev)
	if err == nil && !res.Duplicate {
		o.c.Observe(ev.Type)
	}
	return res, err
}

// Get returns the catalog, keeping the types that match req.Pattern. A
// type with a placeholder segment, such as alert.<alertname>.firing, stands
// for a family and is kept when the pattern could match one of its types
// ("alert.HighCPU.*" keeps it, "alert.*.resolved" does not).
func (c *Catalog) Get(_ context.Context, req mcpe.CatalogRequest) (*mcpe.Catalog, error) {
	match := func(string) bool { return true }
	matchFamily := match
	if req.Pattern != "" {
		p, err := subscriptions.CompilePattern(req.Pattern)
		if err != nil {
			return nil, err
		}
		family := familyMatcher(req.Pattern)
		match = p.Match
		matchFamily = func(t string) bool { return p.Match(t) || family(t) }
	}
	out := &mcpe.Catalog{Sources: []mcpe.CatalogSource{}, Types: []mcpe.CatalogType{}, SeenRecently: []mcpe.SeenType{}}
	for _, s := range c.opts.Sources {
		cs := mcpe.CatalogSource{Name: s.Name, Configured: s.Configured, Endpoint: s.Endpoint, Description: s.Description}
		if s.Configured && s.States != nil {
			cs.Upstreams = s.States()
		}
		out.Sources = append(out.Sources, cs)
		if !s.Configured || s.Types == nil {
			continue
		}
		for _, t := range s.Types() {
			keep := match
			if isFamily(t.Type) {
				keep = matchFamily
			}
			if keep(t.Type) {
				out.Types = append(out.Types, mcpe.CatalogType{Source: s.Name, EventType: t})
			}
		}
	}
	now := c.opts.Clock.Now()
	c.mu.Lock()
	for _, s := range c.seen {
		if now.Sub(s.LastSeenAt) <= c.opts.SeenWindow && match(s.Type) {
			out.SeenRecently = append(out.SeenRecently, *s)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(out.SeenRecently, func(a, b mcpe.SeenType) int {
		if d := b.LastSeenAt.Compare(a.LastSeenAt); d != 0 {
			return d
		}
		return cmp.Compare(a.Type, b.Type)
	})
	return out, nil
}
