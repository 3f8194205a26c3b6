package mcpe

import (
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
func (s Status) Valid() bool { return s == StatusActive || s == StatusPaused || s == StatusExpired }

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

// Filter selects events, as in MCPE section 5. Every part that is present must
// match: the type matches any of EventTypes, the event carries any of Tags,
// and its priority is one of Priority. A filter must have at least one part.
type Filter struct {
	// EventTypes are exact types or patterns; see PatternHelp.
	EventTypes []string `json:"eventTypes,omitempty"`
	// Tags match when the event carries at least one of them.
	Tags []string `json:"tags,omitempty"`
	// Priority matches when the event's priority is in the list.
	Priority []Priority `json:"priority,omitempty"`
	// Where is a CEL condition over type, priority, tags and data that
	// narrows what the other parts matched; a missing field makes it false.
	Where string `json:"where,omitempty"`
}

// MaxFilterPatterns bounds the eventTypes of one filter.
const MaxFilterPatterns = 64

// Delivery says how a subscription's events reach its owner.
type Delivery struct {
	// Channels are the delivery channels; a server accepts those its
	// capability lists. cron and scheduled exclude each other.
	Channels []Channel `json:"channels"`
	// CronSchedule is required with the cron channel, and only then.
	CronSchedule *CronSchedule `json:"cronSchedule,omitempty"`
	// ScheduledDelivery is required with the scheduled channel, and only
	// then.
	ScheduledDelivery *ScheduledDelivery `json:"scheduledDelivery,omitempty"`
	// Fields, when set, are the paths into data each delivered event keeps
	// (see Shape).
	Fields []string `json:"fields,omitempty"`
	// MaxEventBytes, when set, caps one delivered event (see Shape).
	MaxEventBytes int `json:"maxEventBytes,omitempty"`
	// Throttle limits the realtime notifications; nil sends each event.
	Throttle *Throttle `json:"throttle,omitempty"`
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

// Has reports whether d includes channel c.
func (d Delivery) Has(c Channel) bool { return slices.Contains(d.Channels, c) }

// DefaultDelivery is the delivery of a subscription that names none.
func DefaultDelivery() Delivery { return Delivery{Channels: []Channel{ChannelRealtime}} }

// Clone returns a deep copy of d.
func (d Delivery) Clone() Delivery {
	c := d
	c.Channels, c.Fields = slices.Clone(d.Channels), slices.Clone(d.Fields)
	c.Throttle = clonePtr(d.Throttle)
	if cs := d.CronSchedule; cs != nil {
		cp := *cs
		cp.AggregateEvents = clonePtr(cs.AggregateEvents)
		c.CronSchedule = &cp
	}
	if sd := d.ScheduledDelivery; sd != nil {
		cp := *sd
		cp.AggregateEvents, cp.AutoExpire = clonePtr(sd.AggregateEvents), clonePtr(sd.AutoExpire)
		c.ScheduledDelivery = &cp
	}
	return c
}

// Subscription is an agent's standing request for events, as the events_*
// tools show it to its owner.
type Subscription struct {
	ID string `json:"subscriptionId,omitempty"`
	// Label is the owner's short name for it, carried in its deliveries.
	Label    string   `json:"label,omitempty"`
	Status   Status   `json:"status"`
	Filter   Filter   `json:"filter"`
	Delivery Delivery `json:"delivery"`
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
	// NextDelivery is when the cron or scheduled channel fires next.
	NextDelivery *DeliveryTime `json:"nextDelivery,omitempty"`
	// Handler runs for each delivery, besides the delivery to the owner.
	Handler *HandlerSpec `json:"handler,omitempty"`
	// HandlerStatus is what the handler has done; set when Handler is.
	HandlerStatus *HandlerStatus `json:"handlerStatus,omitempty"`
}

// DeliveryTime is a fire time in the subscription's zone and in UTC.
type DeliveryTime struct {
	At  string `json:"at"`
	UTC string `json:"utc"`
}

// Clone returns a deep copy of s.
func (s *Subscription) Clone() *Subscription {
	c := *s
	c.Filter.EventTypes, c.Filter.Tags = slices.Clone(s.Filter.EventTypes), slices.Clone(s.Filter.Tags)
	c.Filter.Priority = slices.Clone(s.Filter.Priority)
	c.Delivery = s.Delivery.Clone()
	c.Handler = s.Handler.Clone()
	if hs := s.HandlerStatus; hs != nil {
		cp := *hs
		cp.LastRunAt = clonePtr(hs.LastRunAt)
		cp.LastToolCalls = slices.Clone(hs.LastToolCalls)
		c.HandlerStatus = &cp
	}
	c.ExpiresAt = clonePtr(s.ExpiresAt)
	c.LastDeliveredAt = clonePtr(s.LastDeliveredAt)
	c.NextDelivery = clonePtr(s.NextDelivery)
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Capability is the MCPE events capability a server advertises.
type Capability struct {
	MaxSubscriptions int       `json:"maxSubscriptions"`
	DeliveryChannels []Channel `json:"deliveryChannels"`
	Features         Features  `json:"features"`
	// Handlers are the handler types the server runs (an extension of
	// MCPE's capability).
	Handlers []HandlerType `json:"handlers"`
}

// Features are the optional MCPE features a server supports.
type Features struct {
	Pause             bool `json:"pause"`
	Wildcards         bool `json:"wildcards"`
	CronSchedule      bool `json:"cronSchedule"`
	ScheduledDelivery bool `json:"scheduledDelivery"`
}
