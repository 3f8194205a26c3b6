package scheduled

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// FuzzPrepare feeds arbitrary deliverAt and timezone values to Prepare: it
// must never panic; a refusal is an *InvalidError of a scheduledDelivery
// field; an accepted delivery is due after now, at a time that survives
// being stored and read back.
func FuzzPrepare(f *testing.F) {
	for _, seed := range []struct {
		at, zone string
	}{
		{"2026-01-15T14:00:00Z", ""}, {"2026-01-15T14:00:00", "Europe/Paris"}, {"2026-03-08T02:30:00", "America/New_York"},
		{"2026-01-15T14:00:00+05:30", "Asia/Tokyo"}, {"2020-01-01T00:00:00Z", ""}, {"tomorrow", ""}, {"2026-01-15T14:00:00", ""},
		{"9999-12-31T23:59:59-23:59", ""}, {"9999-12-31T23:59:59", "Pacific/Kiritimati"}, {"9999-12-31T23:59:59", "Pacific/Pago_Pago"},
		{"2026-01-15T14:00:00.123456789Z", "UTC"}, {"2026-01-15 14:00:00Z", ""}, {"", ""}, {"2026-01-15T14:00:00Z", "Mars/Base"},
	} {
		f.Add(seed.at, seed.zone)
	}
	f.Fuzz(func(t *testing.T, at, zone string) {
		d := scheduledDelivery(mcpe.ScheduledDelivery{DeliverAt: at, Timezone: zone})
		err := Channel{}.Prepare(&d, now)
		if err != nil {
			var ie *mcpe.InvalidError
			if !errors.As(err, &ie) || !strings.HasPrefix(ie.Field, field+".") || ie.Message == "" {
				t.Fatalf("Prepare(%q, %q) = %#v; want an *InvalidError of a scheduledDelivery field", at, zone, err)
			}
			return
		}
		due, ok := Channel{}.Next(d, now, nil)
		if !ok || !due.After(now) {
			t.Fatalf("Prepare(%q, %q) accepted a delivery due at %v, %t; want a time after %v", at, zone, due, ok, now)
		}
		stored, err := time.Parse(time.RFC3339Nano, d.ScheduledDelivery.DeliverAt)
		if err != nil || !stored.Equal(due) {
			t.Fatalf("Prepare(%q, %q) stored deliverAt %q, which reads back as %v (%v)", at, zone, d.ScheduledDelivery.DeliverAt, stored, err)
		}
		if (Channel{}).Zone(d) == nil {
			t.Fatalf("no zone")
		}
	})
}
