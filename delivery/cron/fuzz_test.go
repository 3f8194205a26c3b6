package cron

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// FuzzPrepare feeds arbitrary expressions and zones, as a model might write
// them, to Prepare: it must never panic; a refusal is an *InvalidError of a
// cronSchedule field that quotes what was given; an accepted schedule fires
// after now, and an @every schedule no more often than the floor.
func FuzzPrepare(f *testing.F) {
	for _, seed := range []struct {
		expr, zone string
	}{
		{"0 9 * * *", "America/New_York"}, {"@daily", ""}, {"@every 30m", "UTC"}, {"@every 1s", ""},
		{"*/15 9-17 * * MON-FRI", "Europe/Paris"}, {"0 0 30 2 *", ""}, {"30 2 * * *", "America/New_York"},
		{"CRON_TZ=UTC 0 9 * * *", ""}, {"0 9 * *", ""}, {"@every -5m", ""}, {"@every 500ms", ""},
		{"0 9 * * *", "EST5"}, {"0 9 * * *", "Local"}, {"0 9 * * *", "../../etc/passwd"}, {"@reboot", ""},
		{"0 0 29 2 *", "Pacific/Kiritimati"}, {"@every 87600h", ""}, {"0 9 L * *", ""}, {"0 9 * * 1#2", ""},
	} {
		f.Add(seed.expr, seed.zone)
	}
	c := New(nil)
	f.Fuzz(func(t *testing.T, expr, zone string) {
		d := cronDelivery(mcpe.CronSchedule{Expression: expr, Timezone: zone})
		err := c.Prepare(&d, now)
		if err != nil {
			var ie *mcpe.InvalidError
			if !errors.As(err, &ie) || !strings.HasPrefix(ie.Field, field+".") || ie.Message == "" {
				t.Fatalf("Prepare(%q, %q) = %#v; want an *InvalidError of a cronSchedule field", expr, zone, err)
			}
			if ie.Field == field+".timezone" && !strings.Contains(ie.Message, "America/New_York") {
				t.Fatalf("Prepare(%q, %q): zone error %q gives no example", expr, zone, err)
			}
			return
		}
		next, ok := c.Next(d, now, nil)
		if !ok || !next.After(now) {
			t.Fatalf("Prepare(%q, %q) accepted a schedule whose next fire is %v, %t", expr, zone, next, ok)
		}
		if strings.HasPrefix(strings.TrimSpace(expr), "@every") && next.Sub(now) < DefaultMinEvery {
			t.Fatalf("%q fires after %v, more often than the floor of %v", expr, next.Sub(now), DefaultMinEvery)
		}
		if c.Zone(d) == nil {
			t.Fatalf("Prepare(%q, %q): no zone", expr, zone)
		}
		if _, _, drain, expire := c.Batching(d); drain || expire {
			t.Fatalf("a cron schedule drains or expires")
		}
		// A second fire follows the first.
		if after, ok := c.Next(d, next, &next); ok && !after.After(next) {
			t.Fatalf("%q in %q: after %v comes %v", expr, zone, next, after)
		}
	})
}
