package subscriptions

import (
	"fmt"
	"slices"
	"time"
)

// Status is where a subscription is in its life.
type Status string

// The statuses of a subscription.
const (
	// StatusActive subscriptions receive matching events.
	StatusActive Status = "active"
	// StatusPaused subscriptions receive nothing until resumed; events that
	// arrive meanwhile are not kept for them.
	StatusPaused Status = "paused"
	// StatusExpired subscriptions passed their expiresAt and receive nothing
	// more. They stay listed for a while, then are deleted.
	StatusExpired Status = "expired"
)

// Valid reports whether s is one of the three statuses.
func (s Status) Valid() bool {
	return s == StatusActive || s == StatusPaused || s == StatusExpired
}

// Channel is a way of delivering events, as in MCPE's deliveryChannels.
type Channel string

// The delivery channels of MCPE.
const (
	// ChannelRealtime sends each matching event at once as events/event.
	ChannelRealtime Channel = "realtime"
	// ChannelCron collects events and sends them as events/batch on a cron
	// schedule.
	ChannelCron Channel = "cron"
	// ChannelScheduled collects events and sends them once, at a set time.
	ChannelScheduled Channel = "scheduled"
)

// Delivery says how a subscription's events reach its owner.
type Delivery struct {
	// Channels are the delivery channels; this server accepts those its
	// capability lists. cron and scheduled exclude each other.
	Channels []Channel `json:"channels"`
	// CronSchedule is required with the cron channel, and only then.
	CronSchedule *CronSchedule `json:"cronSchedule,omitempty"`
	// ScheduledDelivery is required with the scheduled channel, and only
	// then.
	ScheduledDelivery *ScheduledDelivery `json:"scheduledDelivery,omitempty"`
}

// CronSchedule configures the cron channel, as in MCPE.
type CronSchedule struct {
	// Expression is a five-field cron expression or a descriptor such as
	// "@daily" or "@every 30m".
	Expression string `json:"expression"`
	// Timezone is an IANA zone; the server fills in "UTC" when it is left
	// out.
	Timezone string `json:"timezone,omitempty"`
	// AggregateEvents sends a digest as one events/batch (true, the
	// default) or each waiting event as its own events/event.
	AggregateEvents *bool `json:"aggregateEvents,omitempty"`
	// MaxEventsPerDelivery bounds one digest; the rest lead the next one.
	MaxEventsPerDelivery int `json:"maxEventsPerDelivery,omitempty"`
}

// ScheduledDelivery configures the scheduled (one-time) channel, as in MCPE.
type ScheduledDelivery struct {
	// DeliverAt is an RFC 3339 time; without a UTC offset it is read in
	// Timezone.
	DeliverAt string `json:"deliverAt"`
	// Timezone is the IANA zone of a DeliverAt without offset.
	Timezone string `json:"timezone,omitempty"`
	// Description is the caller's own label for the delivery.
	Description string `json:"description,omitempty"`
	// AggregateEvents sends one events/batch (true, the default) or each
	// event as its own events/event.
	AggregateEvents *bool `json:"aggregateEvents,omitempty"`
	// AutoExpire ends the subscription after its delivery (true, the
	// default).
	AutoExpire *bool `json:"autoExpire,omitempty"`
}

// Timed returns the buffered channel of d (cron or scheduled), or "".
func (d Delivery) Timed() Channel {
	for _, c := range d.Channels {
		if c == ChannelCron || c == ChannelScheduled {
			return c
		}
	}
	return ""
}

// Immediate reports whether d delivers each event as it is published.
func (d Delivery) Immediate() bool { return d.Has(ChannelRealtime) }

// DefaultDelivery is the delivery of a subscription that names none.
func DefaultDelivery() Delivery { return Delivery{Channels: []Channel{ChannelRealtime}} }

// validate checks d against the channels the server supports.
func (d Delivery) validate(supported []Channel) error {
	list := quoteChannels(supported)
	if len(d.Channels) == 0 {
		return invalid("delivery.channels", "is empty; use [%s]", list)
	}
	for i, c := range d.Channels {
		if !slices.Contains(supported, c) {
			return invalid(fmt.Sprintf("delivery.channels[%d]", i), "%q is not a delivery channel this server offers; use one of %s", c, list)
		}
		if slices.Index(d.Channels, c) != i {
			return invalid(fmt.Sprintf("delivery.channels[%d]", i), "%q is listed twice", c)
		}
	}
	switch {
	case d.Has(ChannelCron) && d.Has(ChannelScheduled):
		return invalid("delivery.channels", `"cron" and "scheduled" cannot be combined in one subscription; create one subscription for each`)
	case d.Has(ChannelCron) && d.CronSchedule == nil:
		return invalid("delivery.cronSchedule", `is required with the "cron" channel, e.g. {"expression": "0 9 * * *", "timezone": "America/New_York"}`)
	case !d.Has(ChannelCron) && d.CronSchedule != nil:
		return invalid("delivery.cronSchedule", `is given but delivery.channels does not include "cron"; add it, or leave cronSchedule out`)
	case d.Has(ChannelScheduled) && d.ScheduledDelivery == nil:
		return invalid("delivery.scheduledDelivery", `is required with the "scheduled" channel, e.g. {"deliverAt": "2026-01-15T14:00:00Z"}`)
	case !d.Has(ChannelScheduled) && d.ScheduledDelivery != nil:
		return invalid("delivery.scheduledDelivery", `is given but delivery.channels does not include "scheduled"; add it, or leave scheduledDelivery out`)
	}
	return nil
}

func quoteChannels(cs []Channel) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q", c)
	}
	return s
}

// Has reports whether d includes channel c.
func (d Delivery) Has(c Channel) bool { return slices.Contains(d.Channels, c) }

// Subscription is an agent's standing request for events, owned by one
// principal. Its JSON form is what the events_* tools return.
type Subscription struct {
	ID string `json:"subscriptionId"`
	// Principal owns the subscription; it is never shown to anyone.
	Principal string   `json:"-"`
	Status    Status   `json:"status"`
	Filter    Filter   `json:"filter"`
	Delivery  Delivery `json:"delivery"`
	// CreatedAt, UpdatedAt and ExpiresAt are UTC.
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// DeliveredCount counts the events delivered to the owner.
	DeliveredCount int64 `json:"deliveredCount"`
	// LastDeliveredAt is when the latest of them was delivered.
	LastDeliveredAt *time.Time `json:"lastDeliveredAt,omitempty"`
	// BufferedEvents counts the events waiting for the next cron or
	// scheduled delivery.
	BufferedEvents int64 `json:"bufferedEvents,omitempty"`
	// NextDelivery is when the cron or scheduled channel fires next; the
	// Service fills it in from NextFireAt.
	NextDelivery *DeliveryTime `json:"nextDelivery,omitempty"`
	// Handler runs for each delivery, besides the delivery to the owner.
	Handler *HandlerSpec `json:"handler,omitempty"`
	// HandlerStatus is what the handler has done; set when Handler is.
	HandlerStatus *HandlerStatus `json:"handlerStatus,omitempty"`
	// NextFireAt and LastFireAt are the timed channel's next and last fire.
	NextFireAt *time.Time `json:"-"`
	LastFireAt *time.Time `json:"-"`
}

// DeliveryTime is a fire time in the subscription's zone and in UTC.
type DeliveryTime struct {
	At  string `json:"at"`
	UTC string `json:"utc"`
}

// Clone returns a deep copy of s.
func (s *Subscription) Clone() *Subscription {
	c := *s
	c.Filter = Filter{
		EventTypes: slices.Clone(s.Filter.EventTypes),
		Tags:       slices.Clone(s.Filter.Tags),
		Priority:   slices.Clone(s.Filter.Priority),
	}
	c.Delivery.Channels = slices.Clone(s.Delivery.Channels)
	if cs := s.Delivery.CronSchedule; cs != nil {
		cp := *cs
		cp.AggregateEvents = clonePtr(cs.AggregateEvents)
		c.Delivery.CronSchedule = &cp
	}
	if sd := s.Delivery.ScheduledDelivery; sd != nil {
		cp := *sd
		cp.AggregateEvents, cp.AutoExpire = clonePtr(sd.AggregateEvents), clonePtr(sd.AutoExpire)
		c.Delivery.ScheduledDelivery = &cp
	}
	c.Handler = s.Handler.Clone()
	if hs := s.HandlerStatus; hs != nil {
		cp := *hs
		cp.LastRunAt = clonePtr(hs.LastRunAt)
		cp.LastToolCalls = slices.Clone(hs.LastToolCalls)
		c.HandlerStatus = &cp
	}
	c.ExpiresAt = clonePtr(s.ExpiresAt)
	c.LastDeliveredAt = clonePtr(s.LastDeliveredAt)
	c.NextFireAt = clonePtr(s.NextFireAt)
	c.LastFireAt = clonePtr(s.LastFireAt)
	if s.NextDelivery != nil {
		nd := *s.NextDelivery
		c.NextDelivery = &nd
	}
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
