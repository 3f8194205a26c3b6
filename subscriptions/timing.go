package subscriptions

import (
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Timing decides when a buffered channel (cron or scheduled) fires. The
// matching events of such a subscription wait in a durable buffer; at each
// fire the Service turns what waits into a delivery.
type Timing interface {
	// Prepare checks the channel's options in d and fills in their
	// defaults, so that the stored delivery says what is in force. now is
	// the server's time; errors are *InvalidError naming the field.
	Prepare(d *mcpe.Delivery, now time.Time) error
	// Next returns the first fire after after, given the last fire (nil
	// before the first); ok is false when the channel will not fire again.
	Next(d mcpe.Delivery, after time.Time, lastFire *time.Time) (next time.Time, ok bool)
	// Zone returns the time zone fire times of d are shown in.
	Zone(d mcpe.Delivery) *time.Location
	// Batching says how a fire of d delivers: as one events/batch of at
	// most max events (aggregate), or as one events/event each; drain
	// sends everything waiting in batches of max instead of leaving the
	// rest for the next fire; expire ends the subscription after a fire
	// with no next one.
	Batching(d mcpe.Delivery) (aggregate bool, max int, drain, expire bool)
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

// WallTime turns a wall-clock time in loc, given as the same date and time in
// UTC, into the instant it names, with the daylight-saving rules of cron and
// scheduled delivery: when the clocks fell back over it, its first
// occurrence; when they sprang forward over it (it does not exist), the first
// instant after the gap.
func WallTime(wall time.Time, loc *time.Location) time.Time {
	// The offsets a day either side: offsets reach +14h (Pacific/Kiritimati)
	// and +13:45 with daylight saving (Pacific/Chatham), so half a day is not
	// always on the same side of a change as wall.
	_, before := wall.Add(-24 * time.Hour).In(loc).Zone()
	_, after := wall.Add(24 * time.Hour).In(loc).Zone()
	var best time.Time
	for _, off := range []int{before, after} {
		t := wall.Add(-time.Duration(off) * time.Second)
		if sameWall(t.In(loc), wall) && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	if !best.IsZero() {
		return best.In(loc)
	}
	// In a gap: the later reading lands after it, in the period that begins
	// where the gap ends.
	later := wall.Add(-time.Duration(min(before, after)) * time.Second)
	gapEnd, _ := later.In(loc).ZoneBounds()
	return gapEnd
}

func sameWall(t, wall time.Time) bool {
	y1, m1, d1 := t.Date()
	y2, m2, d2 := wall.Date()
	h1, mi1, s1 := t.Clock()
	h2, mi2, s2 := wall.Clock()
	return y1 == y2 && m1 == m2 && d1 == d2 && h1 == h2 && mi1 == mi2 && s1 == s2 && t.Nanosecond() == wall.Nanosecond()
}
