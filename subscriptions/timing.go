package subscriptions

import "time"

// Timing decides when a buffered channel (cron or scheduled) fires. The
// matching events of such a subscription wait in a durable buffer; at each
// fire the Service turns what waits into a delivery.
type Timing interface {
	// Prepare checks the channel's options in d and fills in their
	// defaults, so that the stored delivery says what is in force. now is
	// the server's time; errors are *InvalidError naming the field.
	Prepare(d *Delivery, now time.Time) error
	// Next returns the first fire after after, given the last fire (nil
	// before the first); ok is false when the channel will not fire again.
	Next(d Delivery, after time.Time, lastFire *time.Time) (next time.Time, ok bool)
	// Zone returns the time zone fire times of d are shown in.
	Zone(d Delivery) *time.Location
	// Batching says how a fire of d delivers: as one events/batch of at
	// most max events (aggregate), or as one events/event each; drain
	// sends everything waiting in batches of max instead of leaving the
	// rest for the next fire; expire ends the subscription after a fire
	// with no next one.
	Batching(d Delivery) (aggregate bool, max int, drain, expire bool)
}

// LoadZone loads the IANA zone named in field; empty means UTC.
func LoadZone(field, zone string) (*time.Location, error) {
	if zone == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "Local" {
		return nil, invalid(field, `%q is not an IANA time zone; use a name such as "America/New_York", "Europe/Paris" or "UTC"`, zone)
	}
	return loc, nil
}

// Invalid returns an *InvalidError for field; timing implementations use it
// so that their errors name the field like the rest.
func Invalid(field, format string, args ...any) error { return invalid(field, format, args...) }
