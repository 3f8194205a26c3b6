// Package scheduled is the scheduled (one-time) delivery channel of MCPE: a
// subscription's matching events wait in a durable buffer until its
// deliverAt, then go out together as events/batch; with autoExpire (the
// default) the subscription then expires. This package decides when.
package scheduled

import (
	"time"

	"github.com/mcpe-server/mcpe-server/delivery"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// BatchSize bounds one events/batch of a scheduled delivery; more waiting
// events go out in several batches at the same moment.
const BatchSize = 1000

// MaxDescription bounds scheduledDelivery.description.
const MaxDescription = 500

// Channel is the scheduled channel's timing. It implements
// subscriptions.Timing.
type Channel struct{}

var _ subscriptions.Timing = Channel{}

const field = "delivery.scheduledDelivery"

// localLayout is deliverAt without a UTC offset, read in the timezone.
const localLayout = "2006-01-02T15:04:05.999999999"

// Prepare checks d.ScheduledDelivery, requires deliverAt in the future, and
// fills in the defaults (aggregateEvents and autoExpire true). deliverAt is
// stored with its offset, so it no longer depends on timezone.
func (Channel) Prepare(d *mcpe.Delivery, now time.Time) error {
	sd := *d.ScheduledDelivery
	loc, err := subscriptions.LoadZone(field+".timezone", sd.Timezone)
	if err != nil {
		return err
	}
	at, err := time.Parse(time.RFC3339Nano, sd.DeliverAt)
	if err != nil {
		wall, lerr := time.Parse(localLayout, sd.DeliverAt)
		switch {
		case lerr != nil:
			return mcpe.Invalid(field+".deliverAt", "%q is not an RFC 3339 time; use e.g. %q", sd.DeliverAt, now.UTC().Add(4*time.Hour).Truncate(time.Minute).Format(time.RFC3339))
		case sd.Timezone == "":
			return mcpe.Invalid(field+".deliverAt", "%q has no UTC offset; add one (e.g. %q) or give scheduledDelivery.timezone", sd.DeliverAt, sd.DeliverAt+"Z")
		}
		// Like a cron time: a local time skipped by a daylight-saving
		// change means the first instant after the gap, one that occurs
		// twice its first occurrence.
		at = subscriptions.WallTime(wall, loc)
	}
	if !at.After(now) {
		return mcpe.Invalid(field+".deliverAt", "%s is in the past (the server's time is %s); give a later time",
			at.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if len(sd.Description) > MaxDescription {
		return mcpe.Invalid(field+".description", "is %d characters long; at most %d are accepted", len(sd.Description), MaxDescription)
	}
	sd.DeliverAt = at.Format(time.RFC3339Nano)
	if sd.AggregateEvents == nil {
		sd.AggregateEvents = new(true)
	}
	if sd.AutoExpire == nil {
		sd.AutoExpire = new(true)
	}
	d.ScheduledDelivery = &sd
	return nil
}

// deliverAt reads a prepared deliverAt.
func deliverAt(d mcpe.Delivery) (time.Time, bool) {
	at, err := time.Parse(time.RFC3339Nano, d.ScheduledDelivery.DeliverAt)
	return at, err == nil
}

// Next returns deliverAt until the delivery has happened; after, none. A
// deliverAt that passed while the server was down (or the subscription was
// paused) is due at once.
func (Channel) Next(d mcpe.Delivery, _ time.Time, lastFire *time.Time) (time.Time, bool) {
	at, ok := deliverAt(d)
	if !ok || lastFire != nil && !lastFire.Before(at) {
		return time.Time{}, false
	}
	return at, true
}

// Zone returns the zone of deliverAt: its timezone, else its offset.
func (Channel) Zone(d mcpe.Delivery) *time.Location {
	if loc, err := subscriptions.LoadZone("", d.ScheduledDelivery.Timezone); err == nil && d.ScheduledDelivery.Timezone != "" {
		return loc
	}
	if at, ok := deliverAt(d); ok {
		return at.Location()
	}
	return time.UTC
}

// Batching delivers everything waiting, in batches of BatchSize, and expires
// the subscription after with autoExpire.
func (Channel) Batching(d mcpe.Delivery) (aggregate bool, max int, drain, expire bool) {
	sd := d.ScheduledDelivery
	return sd.AggregateEvents == nil || *sd.AggregateEvents, BatchSize, true, sd.AutoExpire == nil || *sd.AutoExpire
}

// NewScheduler returns the firing loop of the scheduled channel: it
// delivers each scheduled subscription's batch at its deliverAt, through f
// (the subscriptions service). Start it after the service and stop it
// before.
func NewScheduler(f delivery.Firer, opts *delivery.SchedulerOptions) *delivery.Scheduler {
	s, err := delivery.NewScheduler(mcpe.ChannelScheduled, f, opts)
	if err != nil {
		panic(err) // only a nil f, a programming error
	}
	return s
}
