package console

import (
	"fmt"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// The chart: events and notifications per minute over the last hour, as
// bars of an SVG drawn on the server (no script, no inline style).
const (
	chartMinutes = 60
	chartWidth   = 1000
	chartHeight  = 150
	chartLeft    = 36
	chartBottom  = 20
	chartTop     = 10
)

// bucket counts one minute of deliveries.
type bucket struct{ events, notifications int }

// chart is the data of the SVG.
type chart struct {
	Width, Height, Left, Base int
	// Max is the count at the top of the scale.
	Max, MaxY int
	Bars      []bar
	// Events and Notifications total the hour.
	Events, Notifications int
}

// bar is one rectangle.
type bar struct {
	X, Y, W, H int
	// Class is "ev" (events) or "nt" (notifications).
	Class string
	Title string
}

// newChart charts the entries of the last hour up to now. entries are the
// newest inboxScan of the inbox, oldest first: cut reports that the hour had
// more, so that the chart misses the oldest of them.
func newChart(entries []subscriptions.InboxEntry, now time.Time) (c chart, cut bool) {
	buckets := make([]bucket, chartMinutes)
	start := now.Truncate(time.Minute).Add(-(chartMinutes - 1) * time.Minute)
	for _, e := range entries {
		if i := int(e.CreatedAt.Sub(start) / time.Minute); !e.CreatedAt.Before(start) && i < chartMinutes {
			buckets[i].notifications += len(e.SubscriptionIDs)
			switch e.Kind {
			case mcpe.InboxEvent:
				buckets[i].events++
			case mcpe.InboxBatch:
				buckets[i].events += len(e.Events)
			}
		}
	}
	// Entries are numbered in the order they are written, so the oldest
	// read is in the last hour only when more of the hour may precede it.
	cut = len(entries) >= inboxScan && !entries[0].CreatedAt.Before(start)
	c = chart{Width: chartWidth, Height: chartHeight, Left: chartLeft, Base: chartHeight - chartBottom, MaxY: chartTop}
	for _, b := range buckets {
		c.Max = max(c.Max, b.events, b.notifications)
		c.Events += b.events
		c.Notifications += b.notifications
	}
	scale := max(c.Max, 1)
	plot := c.Base - chartTop
	step := (chartWidth - chartLeft) / chartMinutes
	w := max(step/2-1, 1)
	for i, b := range buckets {
		x := chartLeft + i*step
		ago := len(buckets) - 1 - i
		for j, v := range []int{b.events, b.notifications} {
			if v == 0 {
				continue
			}
			h := max(v*plot/scale, 1)
			class, what := "ev", "events"
			if j == 1 {
				class, what = "nt", "notifications"
			}
			c.Bars = append(c.Bars, bar{X: x + j*w, Y: c.Base - h, W: w, H: h, Class: class, Title: fmt.Sprintf("%d %s, %d min ago", v, what, ago)})
		}
	}
	return c, cut
}
