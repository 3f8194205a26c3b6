package cron

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// now is the server's time in these tests, a Friday.
var now = time.Date(2026, 1, 16, 10, 0, 0, 0, time.UTC)

func cronDelivery(cs mcpe.CronSchedule) mcpe.Delivery {
	return mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelCron}, CronSchedule: &cs}
}

func TestPrepare(t *testing.T) {
	tests := []struct {
		name string
		opts *Options
		in   mcpe.CronSchedule
		want mcpe.CronSchedule
	}{
		{
			name: "defaults",
			in:   mcpe.CronSchedule{Expression: "0 9 * * *"},
			want: mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "UTC", AggregateEvents: new(true), MaxEventsPerDelivery: 100},
		},
		{
			name: "given values kept",
			in:   mcpe.CronSchedule{Expression: "0 9 * * 1-5", Timezone: "America/New_York", AggregateEvents: new(false), MaxEventsPerDelivery: 5},
			want: mcpe.CronSchedule{Expression: "0 9 * * 1-5", Timezone: "America/New_York", AggregateEvents: new(false), MaxEventsPerDelivery: 5},
		},
		{
			name: "aggregateEvents true and the largest maxEventsPerDelivery",
			in:   mcpe.CronSchedule{Expression: "@daily", Timezone: "Europe/Paris", AggregateEvents: new(true), MaxEventsPerDelivery: 10000},
			want: mcpe.CronSchedule{Expression: "@daily", Timezone: "Europe/Paris", AggregateEvents: new(true), MaxEventsPerDelivery: 10000},
		},
		{
			name: "the smallest maxEventsPerDelivery",
			in:   mcpe.CronSchedule{Expression: "@hourly", Timezone: "UTC", MaxEventsPerDelivery: 1},
			want: mcpe.CronSchedule{Expression: "@hourly", Timezone: "UTC", AggregateEvents: new(true), MaxEventsPerDelivery: 1},
		},
		{
			name: "the expression is kept as written",
			in:   mcpe.CronSchedule{Expression: " 0 9 * * mon-fri "},
			want: mcpe.CronSchedule{Expression: " 0 9 * * mon-fri ", Timezone: "UTC", AggregateEvents: new(true), MaxEventsPerDelivery: 100},
		},
		{
			name: "@every at the default floor",
			in:   mcpe.CronSchedule{Expression: "@every 1m"},
			want: mcpe.CronSchedule{Expression: "@every 1m", Timezone: "UTC", AggregateEvents: new(true), MaxEventsPerDelivery: 100},
		},
		{
			name: "a leap day fires within five years",
			in:   mcpe.CronSchedule{Expression: "0 0 29 2 *"},
			want: mcpe.CronSchedule{Expression: "0 0 29 2 *", Timezone: "UTC", AggregateEvents: new(true), MaxEventsPerDelivery: 100},
		},
		{
			name: "MinEvery 1s accepts @every 1s",
			opts: &Options{MinEvery: time.Second},
			in:   mcpe.CronSchedule{Expression: "@every 1s"},
			want: mcpe.CronSchedule{Expression: "@every 1s", Timezone: "UTC", AggregateEvents: new(true), MaxEventsPerDelivery: 100},
		},
		{
			name: "a negative MinEvery means the default",
			opts: &Options{MinEvery: -time.Hour},
			in:   mcpe.CronSchedule{Expression: "@every 1m"},
			want: mcpe.CronSchedule{Expression: "@every 1m", Timezone: "UTC", AggregateEvents: new(true), MaxEventsPerDelivery: 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := cronDelivery(tt.in)
			given := d.CronSchedule
			if err := New(tt.opts).Prepare(&d, now); err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if diff := cmp.Diff(tt.want, *d.CronSchedule); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.in, *given); diff != "" {
				t.Errorf("Prepare changed the caller's CronSchedule (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrepareErrors(t *testing.T) {
	const zoneHint = `is not an IANA time zone; use a name such as "America/New_York", "Europe/Paris" or "UTC"`
	tests := []struct {
		name  string
		opts  *Options
		in    mcpe.CronSchedule
		field string
		want  string
	}{
		{
			name: "zone EST5", in: mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "EST5"},
			field: "delivery.cronSchedule.timezone",
			want:  `delivery.cronSchedule.timezone: "EST5" ` + zoneHint,
		},
		{
			name: "zone Mars/Olympus", in: mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "Mars/Olympus"},
			field: "delivery.cronSchedule.timezone",
			want:  `delivery.cronSchedule.timezone: "Mars/Olympus" ` + zoneHint,
		},
		{
			name: "zone Local", in: mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "Local"},
			field: "delivery.cronSchedule.timezone",
			want:  `delivery.cronSchedule.timezone: "Local" ` + zoneHint,
		},
		{
			name: "the zone is checked before the expression", in: mcpe.CronSchedule{Expression: "banana", Timezone: "Mars/Olympus"},
			field: "delivery.cronSchedule.timezone",
			want:  `delivery.cronSchedule.timezone: "Mars/Olympus" ` + zoneHint,
		},
		{
			name: "maxEventsPerDelivery -1", in: mcpe.CronSchedule{Expression: "0 9 * * *", MaxEventsPerDelivery: -1},
			field: "delivery.cronSchedule.maxEventsPerDelivery",
			want:  `delivery.cronSchedule.maxEventsPerDelivery: is -1; give a number from 1 to 10000, or leave it out for 100`,
		},
		{
			name: "maxEventsPerDelivery 10001", in: mcpe.CronSchedule{Expression: "0 9 * * *", MaxEventsPerDelivery: 10001},
			field: "delivery.cronSchedule.maxEventsPerDelivery",
			want:  `delivery.cronSchedule.maxEventsPerDelivery: is 10001; give a number from 1 to 10000, or leave it out for 100`,
		},
		{
			name: "never fires", in: mcpe.CronSchedule{Expression: "0 0 30 2 *", Timezone: "Europe/Paris"},
			field: "delivery.cronSchedule.expression",
			want:  `delivery.cronSchedule.expression: "0 0 30 2 *" never fires: no date in the next five years matches it; check the day-of-month and month fields`,
		},
		{
			name: "empty expression", in: mcpe.CronSchedule{},
			field: "delivery.cronSchedule.expression",
			want:  `delivery.cronSchedule.expression: the expression is empty; use five fields (minute hour day-of-month month day-of-week) such as "0 9 * * *" for 09:00 every day, or a descriptor such as "@daily" or "@every 30m"`,
		},
		{
			name: "not an expression", in: mcpe.CronSchedule{Expression: "0 9 * *"},
			field: "delivery.cronSchedule.expression",
			want:  `delivery.cronSchedule.expression: "0 9 * *" is not a cron expression (expected exactly 5 fields, found 4: [0 9 * *])` + notCron,
		},
		{
			name: "a zone inside the expression", in: mcpe.CronSchedule{Expression: "CRON_TZ=Asia/Tokyo 0 9 * * *"},
			field: "delivery.cronSchedule.expression",
			want:  `delivery.cronSchedule.expression: "CRON_TZ=Asia/Tokyo 0 9 * * *" names a time zone inside the expression; put the zone in cronSchedule.timezone instead, e.g. {"expression": "0 9 * * *", "timezone": "America/New_York"}`,
		},
		{
			name: "@every below the default floor", in: mcpe.CronSchedule{Expression: "@every 30s"},
			field: "delivery.cronSchedule.expression",
			want:  `delivery.cronSchedule.expression: "@every 30s" fires more often than this server allows; use an interval of at least 1m0s, e.g. "@every 1m0s"`,
		},
		{
			name: "@every below a MinEvery of an hour", opts: &Options{MinEvery: time.Hour},
			in:    mcpe.CronSchedule{Expression: "@every 59m"},
			field: "delivery.cronSchedule.expression",
			want:  `delivery.cronSchedule.expression: "@every 59m" fires more often than this server allows; use an interval of at least 1h0m0s, e.g. "@every 1h0m0s"`,
		},
		{
			name: "@every below a MinEvery of 1s", opts: &Options{MinEvery: time.Second},
			in:    mcpe.CronSchedule{Expression: "@every 500ms"},
			field: "delivery.cronSchedule.expression",
			want:  `delivery.cronSchedule.expression: "@every 500ms" fires more often than this server allows; use an interval of at least 1s, e.g. "@every 1s"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := cronDelivery(tt.in)
			given := d.CronSchedule
			err := New(tt.opts).Prepare(&d, now)
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
			if d.CronSchedule != given {
				t.Errorf("Prepare replaced the CronSchedule despite the error")
			}
		})
	}
}

func TestNext(t *testing.T) {
	after := time.Date(2026, 1, 16, 15, 0, 0, 0, time.UTC) // 10:00 in New York
	lastFire := time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		cs       mcpe.CronSchedule
		lastFire *time.Time
		want     time.Time
		wantOK   bool
	}{
		{
			name: "weekdays at 09:00 in New York, from a Friday morning",
			cs:   mcpe.CronSchedule{Expression: "0 9 * * 1-5", Timezone: "America/New_York"},
			want: time.Date(2026, 1, 19, 14, 0, 0, 0, time.UTC), wantOK: true,
		},
		{
			name: "the last fire does not matter",
			cs:   mcpe.CronSchedule{Expression: "0 9 * * 1-5", Timezone: "America/New_York"}, lastFire: &lastFire,
			want: time.Date(2026, 1, 19, 14, 0, 0, 0, time.UTC), wantOK: true,
		},
		{
			name: "no timezone is UTC",
			cs:   mcpe.CronSchedule{Expression: "0 9 * * *"},
			want: time.Date(2026, 1, 17, 9, 0, 0, 0, time.UTC), wantOK: true,
		},
		{
			name: "@every counts from after",
			cs:   mcpe.CronSchedule{Expression: "@every 90m", Timezone: "UTC"},
			want: after.Add(90 * time.Minute), wantOK: true,
		},
		{name: "never fires", cs: mcpe.CronSchedule{Expression: "0 0 30 2 *", Timezone: "UTC"}},
		{name: "unknown zone", cs: mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "Mars/Olympus"}},
		{name: "not an expression", cs: mcpe.CronSchedule{Expression: "banana", Timezone: "UTC"}},
	}
	c := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := c.Next(cronDelivery(tt.cs), after, tt.lastFire)
			if !got.Equal(tt.want) || ok != tt.wantOK {
				t.Errorf("Next = %v, %t; want %v, %t", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestZone(t *testing.T) {
	tests := []struct {
		cs   mcpe.CronSchedule
		want string
	}{
		{mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "Europe/Paris"}, "Europe/Paris"},
		{mcpe.CronSchedule{Expression: "@every 1h", Timezone: "Asia/Tokyo"}, "Asia/Tokyo"},
		{mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "UTC"}, "UTC"},
		{mcpe.CronSchedule{Expression: "0 9 * * *"}, "UTC"},
		{mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "Mars/Olympus"}, "UTC"},
		{mcpe.CronSchedule{Expression: "banana", Timezone: "Europe/Paris"}, "UTC"},
	}
	c := New(nil)
	for _, tt := range tests {
		if got := c.Zone(cronDelivery(tt.cs)).String(); got != tt.want {
			t.Errorf("Zone(%+v) = %q, want %q", tt.cs, got, tt.want)
		}
	}
}

func TestBatching(t *testing.T) {
	type batching struct {
		Aggregate     bool
		Max           int
		Drain, Expire bool
	}
	tests := []struct {
		cs   mcpe.CronSchedule
		want batching
	}{
		{mcpe.CronSchedule{Expression: "@daily", AggregateEvents: new(true), MaxEventsPerDelivery: 100}, batching{Aggregate: true, Max: 100}},
		{mcpe.CronSchedule{Expression: "@daily", AggregateEvents: new(false), MaxEventsPerDelivery: 7}, batching{Aggregate: false, Max: 7}},
		{mcpe.CronSchedule{Expression: "@daily", MaxEventsPerDelivery: 10000}, batching{Aggregate: true, Max: 10000}},
	}
	c := New(nil)
	for _, tt := range tests {
		var got batching
		got.Aggregate, got.Max, got.Drain, got.Expire = c.Batching(cronDelivery(tt.cs))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Batching(%+v) mismatch (-want +got):\n%s", tt.cs, diff)
		}
	}
}

// TestScheduleCacheConcurrent runs Prepare, Next and Zone from many
// goroutines over a few shared schedules while others push more than
// maxCached distinct ones through the cache, so that it is cleared while in
// use. Run with -race.
func TestScheduleCacheConcurrent(t *testing.T) {
	type key struct{ expression, zone string }
	var shared []key
	for _, expression := range []string{"0 9 * * *", "*/15 * * * *", "@daily", "30 2 * * *", "@every 90m", "0 0 29 2 *"} {
		for _, zone := range []string{"UTC", "America/New_York", "Europe/Paris", "Australia/Lord_Howe"} {
			shared = append(shared, key{expression, zone})
		}
	}
	after := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	want := map[key]time.Time{}
	for _, k := range shared {
		want[k] = mustParse(t, k.expression, loadZone(t, k.zone)).Next(after)
	}

	c := New(nil)
	const (
		readers, reads = 8, 200
		churners, adds = 8, 600 // churners × adds > maxCached
	)
	var wg sync.WaitGroup
	for g := range readers {
		wg.Go(func() {
			for i := range reads {
				k := shared[(g*7+i)%len(shared)]
				d := cronDelivery(mcpe.CronSchedule{Expression: k.expression, Timezone: k.zone})
				if err := c.Prepare(&d, now); err != nil {
					t.Errorf("Prepare(%+v): %v", k, err)
					return
				}
				if got, ok := c.Next(d, after, nil); !ok || !got.Equal(want[k]) {
					t.Errorf("Next(%+v) = %v, %t; want %v", k, got, ok, want[k])
					return
				}
				if got := c.Zone(d).String(); got != k.zone {
					t.Errorf("Zone(%+v) = %q", k, got)
					return
				}
			}
		})
	}
	paris := loadZone(t, "Europe/Paris")
	for g := range churners {
		wg.Go(func() {
			for i := range adds {
				minute, hour, day := i%60, i/60, g+1
				expression := fmt.Sprintf("%d %d %d * *", minute, hour, day)
				d := cronDelivery(mcpe.CronSchedule{Expression: expression, Timezone: "Europe/Paris"})
				if err := c.Prepare(&d, now); err != nil {
					t.Errorf("Prepare(%q): %v", expression, err)
					return
				}
				got, _ := c.Next(d, after, nil)
				if got := got.In(paris); got.Minute() != minute || got.Hour() != hour || got.Day() != day {
					t.Errorf("Next(%q) = %v", expression, got)
					return
				}
			}
		})
	}
	wg.Wait()
	c.mu.Lock()
	n := len(c.cache)
	c.mu.Unlock()
	if n > maxCached {
		t.Errorf("%d schedules cached, want at most %d", n, maxCached)
	}
}
