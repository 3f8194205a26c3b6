package storetest

import (
	"cmp"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// testCounts checks subscriptions.Counts, for a store that implements it:
// subscriptions by mode and status, and each principal's inbox with the
// oldest entry after its poll cursor.
func testCounts(t *testing.T, open Opener) {
	s := open(t)
	c, ok := s.(subscriptions.Counts)
	if !ok {
		t.Skip("the store does not implement subscriptions.Counts")
	}
	ctx := t.Context()
	alice1, alice2 := newSub(1, "alice"), withStatus(newSub(2, "alice"), mcpe.StatusPaused)
	create(t, s, alice1, alice2, cronSub(3, "bob"), scheduledSub(4, "bob"), newSub(5, "bob"))
	counts, err := c.SubscriptionCounts(ctx)
	if err != nil {
		t.Fatalf("SubscriptionCounts: %v", err)
	}
	slices.SortFunc(counts, func(a, b subscriptions.SubscriptionCount) int {
		return cmp.Or(cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.Status, b.Status))
	})
	want := []subscriptions.SubscriptionCount{
		{Mode: mcpe.ChannelCron, Status: mcpe.StatusActive, N: 1},
		{Mode: mcpe.ChannelRealtime, Status: mcpe.StatusActive, N: 2},
		{Mode: mcpe.ChannelRealtime, Status: mcpe.StatusPaused, N: 1},
		{Mode: mcpe.ChannelScheduled, Status: mcpe.StatusActive, N: 1},
	}
	if diff := gocmp.Diff(want, counts); diff != "" {
		t.Errorf("SubscriptionCounts mismatch (-want +got):\n%s", diff)
	}

	var seqs []int64
	for i := range 3 {
		ev, raw := newEvent(i+1, "test.created", "")
		res := publish(t, s, ev, raw, routes(alice1), at(time.Duration(i)*time.Minute))
		seqs = append(seqs, seqOf(t, res, alice1))
	}
	if err := s.SetPollCursor(ctx, "alice", seqs[0]); err != nil {
		t.Fatal(err)
	}
	sizes, err := c.InboxSizes(ctx)
	if err != nil {
		t.Fatalf("InboxSizes: %v", err)
	}
	wantSizes := []subscriptions.InboxSize{{Principal: "alice", Entries: 3, OldestUnpolled: at(time.Minute)}}
	if diff := gocmp.Diff(wantSizes, sizes); diff != "" {
		t.Errorf("InboxSizes mismatch (-want +got):\n%s", diff)
	}
	if err := s.SetPollCursor(ctx, "alice", seqs[2]); err != nil {
		t.Fatal(err)
	}
	sizes, err = c.InboxSizes(ctx)
	if err != nil {
		t.Fatalf("InboxSizes: %v", err)
	}
	wantSizes[0].OldestUnpolled = time.Time{}
	if diff := gocmp.Diff(wantSizes, sizes); diff != "" {
		t.Errorf("InboxSizes after polling everything mismatch (-want +got):\n%s", diff)
	}
}
