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
	// capability lists.
	Channels []Channel `json:"channels"`
}

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
	if s.ExpiresAt != nil {
		t := *s.ExpiresAt
		c.ExpiresAt = &t
	}
	if s.LastDeliveredAt != nil {
		t := *s.LastDeliveredAt
		c.LastDeliveredAt = &t
	}
	return &c
}
