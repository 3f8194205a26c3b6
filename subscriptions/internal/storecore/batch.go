// How the events a fire takes become inbox entries: batches bounded in count
// and bytes, or one entry per event, then the expiry notice.

package storecore

import (
	"encoding/json"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Delivery is an inbox entry with the columns that name its events: the
// event of an InboxEvent, the JSON array of the events of an InboxBatch.
type Delivery struct {
	subscriptions.InboxEntry
	EventID, EventIDs *string
}

// deliveries are the inbox entries of one served request, in order: its
// batches (Aggregate) or its single events (or, with Empty, one batch of
// none), then its expiry notice.
func (ft *fireTx) deliveries(r subscriptions.FireRequest, w *waiting) []Delivery {
	ids := []string{r.SubscriptionID}
	base := subscriptions.InboxEntry{Principal: r.Principal, SubscriptionIDs: ids, CreatedAt: ft.now}
	remaining := w.total - w.taken
	size := r.Max
	if size <= 0 {
		size = max(len(w.events), 1)
	}
	var out []Delivery
	if r.Aggregate {
		for start := 0; start < len(w.events); {
			end := batchEnd(w.events, start, size)
			e := base
			e.Kind, e.Events, e.Remaining = mcpe.InboxBatch, w.events[start:end:end], remaining+len(w.events)-end
			out = append(out, Delivery{InboxEntry: e, EventIDs: new(MustJSON(w.ids[start:end]))})
			start = end
		}
	} else {
		for j, ev := range w.events {
			e := base
			e.Kind, e.Event = mcpe.InboxEvent, ev
			out = append(out, Delivery{InboxEntry: e, EventID: &w.ids[j]})
		}
	}
	if len(out) == 0 && r.Empty {
		e := base
		e.Kind = mcpe.InboxBatch
		out = append(out, Delivery{InboxEntry: e, EventIDs: new("[]")})
	}
	if r.Expire {
		e := base
		e.Kind = mcpe.InboxExpired
		out = append(out, Delivery{InboxEntry: e})
	}
	return out
}

// batchEnd returns where the batch of events starting at start ends: after
// at most size events, and before its events pass mcpe.MaxPollBytes
// together (but after one event at least), so that a digest is never too
// large to notify or to return in one events_poll page.
func batchEnd(events []json.RawMessage, start, size int) int {
	end, bytes := start, 0
	for end < len(events) && end-start < size {
		if bytes += len(events[end]) + 1; bytes > mcpe.MaxPollBytes-4096 && end > start {
			break
		}
		end++
	}
	return end
}
