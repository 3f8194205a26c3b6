package console

import "fmt"

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

func newChart(buckets []bucket) chart {
	c := chart{Width: chartWidth, Height: chartHeight, Left: chartLeft, Base: chartHeight - chartBottom, MaxY: chartTop}
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
	return c
}
