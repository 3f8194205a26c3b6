package handlers

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// TestFairQueue checks the order in which workers take jobs: the principal
// with the fewest runs in progress first, the one that waited longest on a
// tie, never one at its limit.
func TestFairQueue(t *testing.T) {
	q := newFairQueue()
	push := func(principal string, ids ...string) {
		for _, id := range ids {
			q.push(&subscriptions.Invocation{JobID: id, Principal: principal})
		}
	}
	var got []string
	pop := func(n int) {
		for range n {
			if inv := q.pop(2); inv != nil {
				got = append(got, inv.JobID)
			} else {
				got = append(got, "-")
			}
		}
	}
	push("mallory", "m1", "m2", "m3", "m4")
	pop(1)
	push("alice", "a1", "a2")
	push("bob", "b1")
	pop(5) // alice and bob have nothing running; then mallory's turn is over
	q.done("mallory")
	pop(2)
	q.done("alice")
	q.done("alice")
	pop(1)
	want := []string{
		"m1",
		"a1", "b1", "m2", "a2", "-", // mallory and alice at their limit of 2, bob has no job left
		"m3", "-",
		"-", // mallory still at her limit; alice has no job left
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
}
