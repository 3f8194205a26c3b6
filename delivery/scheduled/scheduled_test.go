package scheduled

import (
	"errors"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, also where the system has no zoneinfo

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// now is the server's time in these tests; its seconds show in the example
// of the "not RFC 3339" error only as far as the minute.
var now = time.Date(2026, 1, 15, 10, 17, 42, 0, time.UTC)

func scheduledDelivery(sd mcpe.ScheduledDelivery) mcpe.Delivery {
	return mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelScheduled}, ScheduledDelivery: &sd}
}

func TestPrepare(t *testing.T) {
	tests := []struct {
		name string
		in   mcpe.ScheduledDelivery
		want mcpe.ScheduledDelivery
	}{
		{
			name: "UTC",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00Z"},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00Z", AggregateEvents: new(true), AutoExpire: new(true)},
		},
		{
			name: "an offset is kept",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-01-16T09:00:00+05:30"},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-01-16T09:00:00+05:30", AggregateEvents: new(true), AutoExpire: new(true)},
		},
		{
			name: "a negative offset and fractional seconds are kept",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T09:00:00.25-05:00"},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T09:00:00.25-05:00", AggregateEvents: new(true), AutoExpire: new(true)},
		},
		{
			name: "+00:00 is stored as Z, the same instant",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00+00:00"},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00Z", AggregateEvents: new(true), AutoExpire: new(true)},
		},
		{
			name: "an offset wins over the timezone, which is kept for display",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00Z", Timezone: "Asia/Tokyo"},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00Z", Timezone: "Asia/Tokyo", AggregateEvents: new(true), AutoExpire: new(true)},
		},
		{
			name: "no offset: read in the timezone, stored with its offset (winter)",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-01-20T09:00:00", Timezone: "Europe/Paris"},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-01-20T09:00:00+01:00", Timezone: "Europe/Paris", AggregateEvents: new(true), AutoExpire: new(true)},
		},
		{
			name: "no offset: read in the timezone, stored with its offset (summer)",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-07-01T09:00:00.5", Timezone: "America/New_York"},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-07-01T09:00:00.5-04:00", Timezone: "America/New_York", AggregateEvents: new(true), AutoExpire: new(true)},
		},
		{
			// 02:30 does not exist on 2026-03-08 in New York (02:00 EST
			// becomes 03:00 EDT). Like a cron time, it means the first
			// instant after the gap, never a time before the one asked for
			// (Go's time.Date would give 01:30 EST).
			name: "no offset, in a spring-forward gap: the end of the gap",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-03-08T02:30:00", Timezone: "America/New_York"},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-03-08T03:00:00-04:00", Timezone: "America/New_York", AggregateEvents: new(true), AutoExpire: new(true)},
		},
		{
			// 01:30 happens twice on 2026-11-01 in New York; Go reads the
			// first, EDT, as a cron fire would.
			name: "no offset, in a fall-back repeat: the first",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-11-01T01:30:00", Timezone: "America/New_York"},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-11-01T01:30:00-04:00", Timezone: "America/New_York", AggregateEvents: new(true), AutoExpire: new(true)},
		},
		{
			name: "timezone UTC",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00", Timezone: "UTC"},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00Z", Timezone: "UTC", AggregateEvents: new(true), AutoExpire: new(true)},
		},
		{
			name: "false is kept",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00Z", Description: "standup digest", AggregateEvents: new(false), AutoExpire: new(false)},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00Z", Description: "standup digest", AggregateEvents: new(false), AutoExpire: new(false)},
		},
		{
			name: "true is kept",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00Z", AggregateEvents: new(true), AutoExpire: new(true)},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00Z", AggregateEvents: new(true), AutoExpire: new(true)},
		},
		{
			name: "a nanosecond after now",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T10:17:42.000000001Z"},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T10:17:42.000000001Z", AggregateEvents: new(true), AutoExpire: new(true)},
		},
		{
			name: "a description of 500 bytes",
			in:   mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00Z", Description: strings.Repeat("é", 250)},
			want: mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00Z", Description: strings.Repeat("é", 250), AggregateEvents: new(true), AutoExpire: new(true)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := scheduledDelivery(tt.in)
			given := d.ScheduledDelivery
			if err := (Channel{}).Prepare(&d, now); err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if diff := cmp.Diff(tt.want, *d.ScheduledDelivery); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.in, *given); diff != "" {
				t.Errorf("Prepare changed the caller's ScheduledDelivery (-want +got):\n%s", diff)
			}
			// With an offset, the stored time is the same instant.
			if given, err := time.Parse(time.RFC3339Nano, tt.in.DeliverAt); err == nil {
				stored, err := time.Parse(time.RFC3339Nano, d.ScheduledDelivery.DeliverAt)
				if err != nil || !stored.Equal(given) {
					t.Errorf("stored deliverAt %q (%v) is not the instant %q", d.ScheduledDelivery.DeliverAt, err, tt.in.DeliverAt)
				}
			}
		})
	}
}

func TestPrepareErrors(t *testing.T) {
	const zoneHint = `is not an IANA time zone; use a name such as "America/New_York", "Europe/Paris" or "UTC"`
	tests := []struct {
		name  string
		in    mcpe.ScheduledDelivery
		now   time.Time // the package's now when zero
		field string
		want  string
	}{
		{
			name:  "no offset and no timezone",
			in:    mcpe.ScheduledDelivery{DeliverAt: "2026-01-20T09:00:00"},
			field: "delivery.scheduledDelivery.deliverAt",
			want:  `delivery.scheduledDelivery.deliverAt: "2026-01-20T09:00:00" has no UTC offset; add one (e.g. "2026-01-20T09:00:00Z") or give scheduledDelivery.timezone`,
		},
		{
			name:  "not RFC 3339",
			in:    mcpe.ScheduledDelivery{DeliverAt: "tomorrow at 9"},
			field: "delivery.scheduledDelivery.deliverAt",
			want:  `delivery.scheduledDelivery.deliverAt: "tomorrow at 9" is not an RFC 3339 time; use e.g. "2026-01-15T14:17:00Z"`,
		},
		{
			name:  "the example follows now, in UTC",
			in:    mcpe.ScheduledDelivery{DeliverAt: "tomorrow at 9"},
			now:   time.Date(2026, 6, 30, 22, 5, 59, 0, time.FixedZone("", -7*3600)),
			field: "delivery.scheduledDelivery.deliverAt",
			want:  `delivery.scheduledDelivery.deliverAt: "tomorrow at 9" is not an RFC 3339 time; use e.g. "2026-07-01T09:05:00Z"`,
		},
		{
			name:  "a space instead of T",
			in:    mcpe.ScheduledDelivery{DeliverAt: "2026-01-20 09:00:00Z"},
			field: "delivery.scheduledDelivery.deliverAt",
			want:  `delivery.scheduledDelivery.deliverAt: "2026-01-20 09:00:00Z" is not an RFC 3339 time; use e.g. "2026-01-15T14:17:00Z"`,
		},
		{
			name:  "no seconds",
			in:    mcpe.ScheduledDelivery{DeliverAt: "2026-01-20T09:00", Timezone: "Europe/Paris"},
			field: "delivery.scheduledDelivery.deliverAt",
			want:  `delivery.scheduledDelivery.deliverAt: "2026-01-20T09:00" is not an RFC 3339 time; use e.g. "2026-01-15T14:17:00Z"`,
		},
		{
			name:  "empty",
			in:    mcpe.ScheduledDelivery{},
			field: "delivery.scheduledDelivery.deliverAt",
			want:  `delivery.scheduledDelivery.deliverAt: "" is not an RFC 3339 time; use e.g. "2026-01-15T14:17:00Z"`,
		},
		{
			name:  "in the past",
			in:    mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T09:00:00Z"},
			field: "delivery.scheduledDelivery.deliverAt",
			want:  `delivery.scheduledDelivery.deliverAt: 2026-01-15T09:00:00Z is in the past (the server's time is 2026-01-15T10:17:42Z); give a later time`,
		},
		{
			name:  "in the past, read in the timezone",
			in:    mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T11:00:00", Timezone: "Europe/Paris"},
			field: "delivery.scheduledDelivery.deliverAt",
			want:  `delivery.scheduledDelivery.deliverAt: 2026-01-15T10:00:00Z is in the past (the server's time is 2026-01-15T10:17:42Z); give a later time`,
		},
		{
			name:  "exactly now",
			in:    mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T11:17:42+01:00"},
			field: "delivery.scheduledDelivery.deliverAt",
			want:  `delivery.scheduledDelivery.deliverAt: 2026-01-15T10:17:42Z is in the past (the server's time is 2026-01-15T10:17:42Z); give a later time`,
		},
		{
			name:  "unknown timezone",
			in:    mcpe.ScheduledDelivery{DeliverAt: "2026-01-20T09:00:00", Timezone: "Mars/Olympus"},
			field: "delivery.scheduledDelivery.timezone",
			want:  `delivery.scheduledDelivery.timezone: "Mars/Olympus" ` + zoneHint,
		},
		{
			name:  "unknown timezone, even with an offset",
			in:    mcpe.ScheduledDelivery{DeliverAt: "2026-01-20T09:00:00Z", Timezone: "EST5"},
			field: "delivery.scheduledDelivery.timezone",
			want:  `delivery.scheduledDelivery.timezone: "EST5" ` + zoneHint,
		},
		{
			name:  "timezone Local",
			in:    mcpe.ScheduledDelivery{DeliverAt: "2026-01-20T09:00:00", Timezone: "Local"},
			field: "delivery.scheduledDelivery.timezone",
			want:  `delivery.scheduledDelivery.timezone: "Local" ` + zoneHint,
		},
		{
			name:  "description over 500 bytes",
			in:    mcpe.ScheduledDelivery{DeliverAt: "2026-01-20T09:00:00Z", Description: strings.Repeat("x", 501)},
			field: "delivery.scheduledDelivery.description",
			want:  `delivery.scheduledDelivery.description: is 501 characters long; at most 500 are accepted`,
		},
		{
			// The limit counts bytes, as the other length limits do: 167
			// three-byte characters are 501 bytes.
			name:  "description over 500 bytes in fewer characters",
			in:    mcpe.ScheduledDelivery{DeliverAt: "2026-01-20T09:00:00Z", Description: strings.Repeat("日", 167)},
			field: "delivery.scheduledDelivery.description",
			want:  `delivery.scheduledDelivery.description: is 501 characters long; at most 500 are accepted`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := now
			if !tt.now.IsZero() {
				at = tt.now
			}
			d := scheduledDelivery(tt.in)
			given := d.ScheduledDelivery
			err := (Channel{}).Prepare(&d, at)
			var ie *mcpe.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("Prepare = %v (%T), want an *InvalidError", err, err)
			}
			if ie.Field != tt.field {
				t.Errorf("field %q, want %q", ie.Field, tt.field)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if d.ScheduledDelivery != given {
				t.Errorf("Prepare replaced the ScheduledDelivery despite the error")
			}
		})
	}
}

func TestNext(t *testing.T) {
	at := time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC)
	before, after := at.Add(-time.Second), at.Add(time.Second)
	prepared := mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T15:00:00+01:00", AggregateEvents: new(true), AutoExpire: new(true)}
	tests := []struct {
		name     string
		sd       mcpe.ScheduledDelivery
		after    time.Time
		lastFire *time.Time
		want     time.Time
		wantOK   bool
	}{
		{name: "before deliverAt, no fire yet", sd: prepared, after: now, want: at, wantOK: true},
		{name: "deliverAt passed while down: due at once", sd: prepared, after: at.Add(72 * time.Hour), want: at, wantOK: true},
		{name: "after is deliverAt", sd: prepared, after: at, want: at, wantOK: true},
		{name: "a fire before deliverAt", sd: prepared, after: now, lastFire: &before, want: at, wantOK: true},
		{name: "fired at deliverAt", sd: prepared, after: at, lastFire: &at},
		{name: "fired after deliverAt", sd: prepared, after: after, lastFire: &after},
		{name: "deliverAt not prepared", sd: mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T14:00:00"}, after: now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := (Channel{}).Next(scheduledDelivery(tt.sd), tt.after, tt.lastFire)
			if !got.Equal(tt.want) || ok != tt.wantOK {
				t.Errorf("Next = %v, %t; want %v, %t", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestZone(t *testing.T) {
	tests := []struct {
		name string
		sd   mcpe.ScheduledDelivery
		// wantName is the zone's name, or "" for a zone known only by
		// its offset at deliverAt, wantOffset.
		wantName   string
		wantOffset int
	}{
		{"the timezone", mcpe.ScheduledDelivery{DeliverAt: "2026-01-15T23:00:00+09:00", Timezone: "Asia/Tokyo"}, "Asia/Tokyo", 9 * 3600},
		{"the timezone, though deliverAt is in UTC", mcpe.ScheduledDelivery{DeliverAt: "2026-07-01T13:00:00Z", Timezone: "America/New_York"}, "America/New_York", -4 * 3600},
		{"no timezone: the offset", mcpe.ScheduledDelivery{DeliverAt: "2026-01-16T09:00:00+05:30"}, "", 5*3600 + 1800},
		{"no timezone: UTC", mcpe.ScheduledDelivery{DeliverAt: "2026-01-16T09:00:00Z"}, "", 0},
		{"an unknown timezone: the offset", mcpe.ScheduledDelivery{DeliverAt: "2026-01-16T09:00:00-03:00", Timezone: "Mars/Olympus"}, "", -3 * 3600},
		{"nothing readable: UTC", mcpe.ScheduledDelivery{DeliverAt: "soon", Timezone: "Mars/Olympus"}, "UTC", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc := (Channel{}).Zone(scheduledDelivery(tt.sd))
			if tt.wantName != "" && loc.String() != tt.wantName {
				t.Errorf("Zone = %q, want %q", loc, tt.wantName)
			}
			// Shown in the zone, deliverAt keeps its clock reading.
			at, err := time.Parse(time.RFC3339Nano, tt.sd.DeliverAt)
			if err != nil {
				return
			}
			if _, off := at.In(loc).Zone(); off != tt.wantOffset {
				t.Errorf("deliverAt in %q has offset %d, want %d", loc, off, tt.wantOffset)
			}
			if tt.sd.Timezone == "" {
				if got := at.In(loc).Format(time.RFC3339Nano); got != tt.sd.DeliverAt {
					t.Errorf("deliverAt in %q is %s, want %s", loc, got, tt.sd.DeliverAt)
				}
			}
		})
	}
}

func TestBatching(t *testing.T) {
	type batching struct {
		Aggregate     bool
		Max           int
		Drain, Expire bool
	}
	tests := []struct {
		name string
		sd   mcpe.ScheduledDelivery
		want batching
	}{
		{"defaults", mcpe.ScheduledDelivery{AggregateEvents: new(true), AutoExpire: new(true)}, batching{Aggregate: true, Max: BatchSize, Drain: true, Expire: true}},
		{"unset is true", mcpe.ScheduledDelivery{}, batching{Aggregate: true, Max: BatchSize, Drain: true, Expire: true}},
		{"one event at a time", mcpe.ScheduledDelivery{AggregateEvents: new(false), AutoExpire: new(true)}, batching{Aggregate: false, Max: BatchSize, Drain: true, Expire: true}},
		{"no autoExpire", mcpe.ScheduledDelivery{AggregateEvents: new(true), AutoExpire: new(false)}, batching{Aggregate: true, Max: BatchSize, Drain: true, Expire: false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.sd.DeliverAt = "2026-01-15T14:00:00Z"
			var got batching
			got.Aggregate, got.Max, got.Drain, got.Expire = (Channel{}).Batching(scheduledDelivery(tt.sd))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if BatchSize != 1000 {
		t.Errorf("BatchSize = %d, want 1000", BatchSize)
	}
}
