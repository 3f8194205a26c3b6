package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// principalState is everything a principal owns, as the store reports it.
type principalState struct {
	Subscriptions []*subscriptions.Subscription
	Inbox         []subscriptions.InboxEntry
	PollCursor    int64
}

func stateOf(t *testing.T, s subscriptions.Store, principal string) principalState {
	t.Helper()
	return principalState{
		Subscriptions: list(t, s, subscriptions.ListQuery{Principal: principal}),
		Inbox:         inbox(t, s, principal),
		PollCursor:    pollCursor(t, s, principal),
	}
}

// populate gives each principal, in order, subs[i] subscriptions, one event
// delivered to all of them and a poll cursor, and returns what each owns.
func populate(t *testing.T, s subscriptions.Store, principals []string, subs []int) map[string]principalState {
	t.Helper()
	n := 0
	for i, p := range principals {
		var own []*subscriptions.Subscription
		for range subs[i] {
			n++
			own = append(own, newSub(n, p))
		}
		create(t, s, own...)
		ev, raw := newEvent(i+1, "test.created", "")
		publish(t, s, ev, raw, targets(own...), at(time.Hour))
		setPollCursor(t, s, p, int64(i+1))
	}
	states := make(map[string]principalState)
	for _, p := range principals {
		states[p] = stateOf(t, s, p)
	}
	return states
}

// testDeletePrincipal checks that DeletePrincipal removes the principal's
// subscriptions, inbox and poll cursor, and nothing of anyone else's.
func testDeletePrincipal(t *testing.T, open Opener) {
	s := open(t)
	before := populate(t, s, []string{"alice", "bob"}, []int{2, 1})
	if err := s.DeletePrincipal(t.Context(), "alice"); err != nil {
		t.Fatalf("DeletePrincipal: %v", err)
	}
	diff(t, "alice after DeletePrincipal", principalState{}, stateOf(t, s, "alice"))
	diff(t, "bob after DeletePrincipal(alice)", before["bob"], stateOf(t, s, "bob"))
	for _, sub := range before["alice"].Subscriptions {
		_, err := s.GetSubscription(t.Context(), "alice", sub.ID)
		checkNotFound(t, "GetSubscription after DeletePrincipal", err)
	}

	if err := s.DeletePrincipal(t.Context(), "nobody"); err != nil {
		t.Errorf("DeletePrincipal of a principal that owns nothing: %v", err)
	}
	diff(t, "bob after DeletePrincipal(nobody)", before["bob"], stateOf(t, s, "bob"))
}

// testDeletePrincipalsWithPrefix checks that DeletePrincipalsWithPrefix
// matches the prefix literally and case-sensitively.
func testDeletePrincipalsWithPrefix(t *testing.T, open Opener) {
	principals := []string{"eph:1", "eph:2", "eph:3", "eph_x", "ephAx", "eph%y", "ephBy", "EPH:1", "xeph:1", "other"}
	subs := []int{2, 1, 0, 1, 1, 1, 1, 1, 1, 1}
	tests := []struct {
		prefix string
		gone   []string
		want   int
	}{
		{"eph:", []string{"eph:1", "eph:2", "eph:3"}, 3},
		{"eph_", []string{"eph_x"}, 1},
		{"eph%", []string{"eph%y"}, 1},
		{"eph", []string{"eph:1", "eph:2", "eph:3", "eph_x", "ephAx", "eph%y", "ephBy"}, 7},
		{"eph:1", []string{"eph:1"}, 2},
		{"%", nil, 0},
		{"_", nil, 0},
		{"nobody", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			s := open(t)
			before := populate(t, s, principals, subs)
			n, err := s.DeletePrincipalsWithPrefix(t.Context(), tt.prefix)
			if err != nil {
				t.Fatalf("DeletePrincipalsWithPrefix: %v", err)
			}
			if n != tt.want {
				t.Errorf("DeletePrincipalsWithPrefix = %d, want %d", n, tt.want)
			}
			for _, p := range principals {
				want := before[p]
				if slices.Contains(tt.gone, p) {
					want = principalState{}
				}
				diff(t, "what "+p+" owns", want, stateOf(t, s, p))
			}
		})
	}
}
