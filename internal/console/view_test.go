package console

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// longInbox is a Service whose one principal has n inbox entries, one a
// second up to now; it reads only through LatestInbox.
type longInbox struct {
	Service
	n     int
	now   time.Time
	limit int
}

func (l *longInbox) List(context.Context, string, mcpe.Status) ([]*subscriptions.Subscription, error) {
	return nil, nil
}

func (l *longInbox) LatestInbox(_ context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error) {
	l.limit = limit
	var out []subscriptions.InboxEntry
	for seq := max(1, l.n-limit+1); seq <= l.n; seq++ {
		out = append(out, subscriptions.InboxEntry{
			Seq: int64(seq), Principal: principal, Kind: mcpe.InboxEvent, SubscriptionIDs: []string{"s"},
			Event:     json.RawMessage(fmt.Sprintf(`{"id":"e%d","type":"t"}`, seq)),
			CreatedAt: l.now.Add(-time.Duration(l.n-seq) * time.Second),
		})
	}
	return out, nil
}

// TestPageReadsTheNewestEntries checks that the page lists the newest
// entries of a long inbox, charts what it read, and says when the hour had
// more entries than it read.
func TestPageReadsTheNewestEntries(t *testing.T) {
	now := time.Date(2026, 3, 2, 8, 30, 30, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		n        int
		wantCut  bool
		wantMore bool
	}{
		{"short", 100, false, false},
		// 200 000 entries, one a second: the hour has 3600 (fewer than are read).
		{"long, hour read whole", 200_000, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &longInbox{n: tc.n, now: now}
			c, err := New(Options{Service: svc, AdminToken: "admin-token-0123456789", Clock: clocktest.NewFake(now)})
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.build(context.Background(), session{principal: "alice"}, "")
			if err != nil {
				t.Fatal(err)
			}
			if svc.limit != inboxScan {
				t.Errorf("read the newest %d entries, want %d", svc.limit, inboxScan)
			}
			if len(p.Inbox) != inboxShown || p.Inbox[0].Seq != int64(tc.n) || p.Inbox[inboxShown-1].Seq != int64(tc.n-inboxShown+1) {
				t.Fatalf("listed %d entries, first %d; want %d, newest %d first", len(p.Inbox), p.Inbox[0].Seq, inboxShown, tc.n)
			}
			if p.ChartCut != tc.wantCut || p.InboxMore != tc.wantMore {
				t.Errorf("ChartCut %t, InboxMore %t; want %t, %t", p.ChartCut, p.InboxMore, tc.wantCut, tc.wantMore)
			}
			// The hour runs from 07:31:00 to 08:30:30: 59 minutes and 31 seconds.
			if want := 59*60 + 31; tc.n > 3600 && p.Chart.Events != want {
				t.Errorf("chart counts %d events, want %d", p.Chart.Events, want)
			}
		})
	}
	// Two entries a second: the hour has more than is read.
	svc := &longInbox{n: 200_000, now: now}
	svc2 := &halfSecond{svc}
	c, err := New(Options{Service: svc2, AdminToken: "admin-token-0123456789", Clock: clocktest.NewFake(now)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.build(context.Background(), session{principal: "alice"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !p.ChartCut || p.Chart.Events != inboxScan {
		t.Errorf("with 7200 entries in the hour: ChartCut %t, %d events charted; want true, %d", p.ChartCut, p.Chart.Events, inboxScan)
	}
}

// halfSecond spaces the entries of a longInbox half a second apart.
type halfSecond struct{ *longInbox }

func (h *halfSecond) LatestInbox(ctx context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error) {
	out, err := h.longInbox.LatestInbox(ctx, principal, limit)
	for i := range out {
		out[i].CreatedAt = h.now.Add(-time.Duration(h.n-int(out[i].Seq)) * time.Second / 2)
	}
	return out, err
}
