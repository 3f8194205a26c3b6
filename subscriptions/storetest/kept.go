package storetest

import (
	"fmt"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// testKeptTypes checks subscriptions.TypeStore, for a store that implements
// it: types are kept for the window after they were last posted, most
// recent first; past the limits a flood of new types is refused and pushes
// out none kept before it, and room comes back as kept types age out.
func testKeptTypes(t *testing.T, open Opener) {
	s, ok := open(t).(subscriptions.TypeStore)
	if !ok {
		t.Fatal("the store does not implement subscriptions.TypeStore: the catalog keeps the types posted to /v1/events in it")
	}
	ctx := t.Context()
	const window, limit = time.Hour, 8
	keep := func(typ string, now time.Time, want bool) {
		t.Helper()
		if kept, err := s.KeepType(ctx, typ, now, window, limit); err != nil || kept != want {
			t.Fatalf("KeepType(%s) = %v, %v; want %v", typ, kept, err, want)
		}
	}
	list := func(now time.Time) []mcpe.SeenType {
		t.Helper()
		got, err := s.KeptTypes(ctx, now, window)
		if err != nil {
			t.Fatalf("KeptTypes: %v", err)
		}
		return got
	}
	if got := list(at(0)); len(got) != 0 {
		t.Fatalf("an empty store keeps %v", got)
	}
	keep("deploy.failed", at(0), true)
	keep("build.done", at(time.Minute), true)
	keep("deploy.failed", at(2*time.Minute), true)
	want := []mcpe.SeenType{{Type: "deploy.failed", LastSeenAt: at(2 * time.Minute)}, {Type: "build.done", LastSeenAt: at(time.Minute)}}
	if diff := gocmp.Diff(want, list(at(2*time.Minute))); diff != "" {
		t.Errorf("KeptTypes mismatch (-want +got):\n%s", diff)
	}

	// A flood from one source gets a quarter of the limit; from many, the
	// rest of it. Those kept before stay.
	for i := range 20 {
		keep(fmt.Sprintf("flood.t%d", i), at(3*time.Minute), i < 2)
	}
	for i := range 20 {
		keep(fmt.Sprintf("f%d.x", i), at(4*time.Minute), i < 4)
	}
	got := list(at(4 * time.Minute))
	if len(got) != limit || got[len(got)-1].Type != "build.done" {
		t.Fatalf("after floods kept %v; want %d types, build.done among them", got, limit)
	}
	keep("build.done", at(5*time.Minute), true) // a kept type is still seen, past the limit

	// An hour after build.done was last posted, the types of the floods
	// and deploy.failed are gone, and there is room again.
	later := at(5*time.Minute + window)
	if got := list(later); len(got) != 1 || got[0].Type != "build.done" {
		t.Fatalf("after the window kept %v; want build.done alone", got)
	}
	keep("flood.t19", later, true)
	keep("deploy.failed", later, true)
	if got := list(later); len(got) != 3 {
		t.Fatalf("after the window and two new types kept %v; want 3", got)
	}
}
