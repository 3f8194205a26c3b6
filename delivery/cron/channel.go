package cron

import (
	"cmp"
	"sync"
	"time"

	"github.com/mcpe-server/mcpe-server/delivery"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Defaults and bounds of the cron channel.
const (
	DefaultMinEvery             = time.Minute
	DefaultMaxEventsPerDelivery = 100
	MaxEventsPerDelivery        = 10000
)

// Options configure a Channel. A nil *Options means all defaults.
type Options struct {
	// MinEvery is the shortest "@every" interval accepted; zero means
	// DefaultMinEvery.
	MinEvery time.Duration
}

// Channel is the cron channel's timing: it checks cronSchedule options and
// computes fire times. It implements subscriptions.Timing.
type Channel struct {
	minEvery time.Duration

	mu    sync.Mutex
	cache map[scheduleKey]*Schedule
}

type scheduleKey struct{ expression, zone string }

// maxCached bounds the parsed schedules kept.
const maxCached = 4096

var _ subscriptions.Timing = (*Channel)(nil)

// New returns the cron channel.
func New(opts *Options) *Channel {
	c := &Channel{minEvery: DefaultMinEvery, cache: make(map[scheduleKey]*Schedule)}
	if opts != nil && opts.MinEvery > 0 {
		c.minEvery = opts.MinEvery
	}
	return c
}

const field = "delivery.cronSchedule"

// Prepare checks d.CronSchedule and fills in the defaults: timezone UTC,
// aggregateEvents true, maxEventsPerDelivery 100.
func (c *Channel) Prepare(d *mcpe.Delivery, now time.Time) error {
	cs := *d.CronSchedule
	cs.Timezone = cmp.Or(cs.Timezone, "UTC")
	s, err := c.schedule(cs)
	if err != nil {
		return err
	}
	if s.Next(now).IsZero() {
		return mcpe.Invalid(field+".expression", "%q never fires: no date in the next five years matches it; check the day-of-month and month fields", cs.Expression)
	}
	if cs.AggregateEvents == nil {
		cs.AggregateEvents = new(true)
	}
	switch n := cs.MaxEventsPerDelivery; {
	case n == 0:
		cs.MaxEventsPerDelivery = DefaultMaxEventsPerDelivery
	case n < 0 || n > MaxEventsPerDelivery:
		return mcpe.Invalid(field+".maxEventsPerDelivery", "is %d; give a number from 1 to %d, or leave it out for %d", n, MaxEventsPerDelivery, DefaultMaxEventsPerDelivery)
	}
	d.CronSchedule = &cs
	return nil
}

// schedule parses cs, from the cache when it can.
func (c *Channel) schedule(cs mcpe.CronSchedule) (*Schedule, error) {
	key := scheduleKey{cs.Expression, cs.Timezone}
	c.mu.Lock()
	s := c.cache[key]
	c.mu.Unlock()
	if s != nil {
		return s, nil
	}
	loc, err := subscriptions.LoadZone(field+".timezone", cs.Timezone)
	if err != nil {
		return nil, err
	}
	s, err = Parse(cs.Expression, loc, c.minEvery)
	if err != nil {
		return nil, mcpe.Invalid(field+".expression", "%s", err.Error())
	}
	c.mu.Lock()
	if len(c.cache) >= maxCached {
		clear(c.cache)
	}
	c.cache[key] = s
	c.mu.Unlock()
	return s, nil
}

// Next returns the first fire after after.
func (c *Channel) Next(d mcpe.Delivery, after time.Time, _ *time.Time) (time.Time, bool) {
	s, err := c.schedule(*d.CronSchedule)
	if err != nil {
		return time.Time{}, false
	}
	t := s.Next(after)
	return t, !t.IsZero()
}

// Zone returns the schedule's zone.
func (c *Channel) Zone(d mcpe.Delivery) *time.Location {
	if s, err := c.schedule(*d.CronSchedule); err == nil {
		return s.Location()
	}
	return time.UTC
}

// Batching delivers at most maxEventsPerDelivery per fire; the rest lead the
// next digest.
func (c *Channel) Batching(d mcpe.Delivery) (aggregate bool, max int, drain, expire bool) {
	cs := d.CronSchedule
	return cs.AggregateEvents == nil || *cs.AggregateEvents, cs.MaxEventsPerDelivery, false, false
}

// NewScheduler returns the firing loop of the cron channel: it fires each
// cron subscription's digest when its schedule says, through f (the
// subscriptions service). Start it after the service and stop it before.
func NewScheduler(f delivery.Firer, opts *delivery.SchedulerOptions) *delivery.Scheduler {
	s, err := delivery.NewScheduler(mcpe.ChannelCron, f, opts)
	if err != nil {
		panic(err) // only a nil f, a programming error
	}
	return s
}
