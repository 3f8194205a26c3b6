package storecore

import (
	"cmp"
	"slices"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// BufferedTargets lists the active cron and scheduled subscriptions among
// targets, each once; with active nil, every target is active.
func BufferedTargets(targets []subscriptions.Target, active map[string]bool) []string {
	var out []string
	seen := make(map[string]bool)
	for _, t := range targets {
		if (t.Channel == mcpe.ChannelCron || t.Channel == mcpe.ChannelScheduled) && (active == nil || active[t.SubscriptionID]) && !seen[t.SubscriptionID] {
			seen[t.SubscriptionID] = true
			out = append(out, t.SubscriptionID)
		}
	}
	return out
}

// GroupByPrincipal turns the active realtime targets into one inbox entry
// per principal, in the order the principals first appear, each
// subscription listed once; with active nil, every target is active.
func GroupByPrincipal(targets []subscriptions.Target, active map[string]bool) []subscriptions.InboxEntry {
	var out []subscriptions.InboxEntry
	byPrincipal := make(map[string]int)
	listed := make(map[string]bool)
	for _, t := range targets {
		if t.Channel != mcpe.ChannelRealtime || listed[t.SubscriptionID] || active != nil && !active[t.SubscriptionID] {
			continue
		}
		listed[t.SubscriptionID] = true
		i, ok := byPrincipal[t.Principal]
		if !ok {
			i = len(out)
			byPrincipal[t.Principal] = i
			out = append(out, subscriptions.InboxEntry{Principal: t.Principal})
		}
		out[i].SubscriptionIDs = append(out[i].SubscriptionIDs, t.SubscriptionID)
	}
	return out
}

// FinishPublish fills in the results of a publish of pubs at now: each new
// event's (fresh) inbox entries, in sequence order.
func FinishPublish(res []subscriptions.PublishResult, pubs []subscriptions.Publication, fresh []bool, entries [][]subscriptions.InboxEntry, now time.Time) {
	for i := range pubs {
		if !fresh[i] {
			continue
		}
		for j := range entries[i] {
			entries[i][j].Kind, entries[i][j].Event, entries[i][j].CreatedAt = mcpe.InboxEvent, pubs[i].Raw, now
		}
		slices.SortFunc(entries[i], func(x, y subscriptions.InboxEntry) int { return cmp.Compare(x.Seq, y.Seq) })
		res[i].Delivered = entries[i]
	}
}
