package client

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string // a part of the error; "" for none
	}{
		{"zero", Options{}, ""},
		{"all set", Options{BackoffMin: time.Millisecond, BackoffMax: time.Minute, DedupSize: 5, Cursor: "42"}, ""},
		{"negative BackoffMin", Options{BackoffMin: -1}, "Options.BackoffMin"},
		{"negative BackoffMax", Options{BackoffMax: -time.Second}, "Options.BackoffMax"},
		{"BackoffMax below BackoffMin", Options{BackoffMin: time.Minute, BackoffMax: time.Second}, "Options.BackoffMax (1s) is less than Options.BackoffMin (1m0s)"},
		{"negative DedupSize", Options{DedupSize: -3}, "Options.DedupSize"},
		{"Cursor not a number", Options{Cursor: "yesterday"}, `Options.Cursor "yesterday" is not a cursor`},
		{"negative Cursor", Options{Cursor: "-4"}, `Options.Cursor "-4"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(&tc.opts)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want == "":
				c.Close()
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c, err := New(&Options{BackoffMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := []any{c.opts.BackoffMin, c.opts.BackoffMax, c.opts.DedupSize, c.opts.Implementation.Name, c.opts.Clock != nil}
	want := []any{10 * time.Millisecond, 10 * time.Millisecond, DefaultDedupSize, "mcpe-client", true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults mismatch (-want +got):\n%s", diff)
	}
}

func TestConnectMisuse(t *testing.T) {
	c, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(context.Background(), ""); err == nil || !strings.Contains(err.Error(), ErrNotConnected.Error()) {
		t.Errorf("List before Connect = %v, want ErrNotConnected", err)
	}
	if err := c.Connect(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "Options.Reconnect") {
		t.Errorf("Connect(nil) without Reconnect = %v", err)
	}
	if err := c.Connect(context.Background(), nil); err != ErrClosed {
		t.Errorf("Connect after a failed Connect = %v, want ErrClosed", err)
	}
}

// TestDedupIsBounded checks that the memory of deliveries keeps the last n
// keys, no more.
func TestDedupIsBounded(t *testing.T) {
	d := newDedup(3)
	var got []bool
	for _, k := range []string{"a", "b", "a", "c", "d", "b", "a", "d"} {
		got = append(got, d.add(k))
	}
	// a b c fill it; d evicts a; b is still there; a is new again
	// (evicting b); d is still there.
	want := []bool{true, true, false, true, true, false, true, false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("add mismatch (-want +got):\n%s", diff)
	}
	if len(d.keys) != 3 {
		t.Errorf("%d keys remembered, want 3", len(d.keys))
	}
	for i := range 10000 {
		d.add(fmt.Sprint(i))
	}
	if len(d.keys) != 3 || len(d.ring) != 3 {
		t.Errorf("after 10000 keys: %d remembered in a ring of %d, want 3", len(d.keys), len(d.ring))
	}
}

// TestBackoffBounds checks the waits without a clock: each is within
// [max/2, max] for its attempt, and never above BackoffMax.
func TestBackoffBounds(t *testing.T) {
	c, err := New(&Options{BackoffMin: 10 * time.Millisecond, BackoffMax: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for attempt := range 70 {
		limit := 10 * time.Millisecond
		for range attempt {
			limit = min(2*limit, 300*time.Millisecond)
		}
		for range 20 {
			if d := c.backoff(attempt); d < limit/2 || d > limit {
				t.Fatalf("backoff(%d) = %v, want between %v and %v", attempt, d, limit/2, limit)
			}
		}
	}
}
