package client

import (
	"context"
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
		{"all set", Options{BackoffMin: time.Millisecond, BackoffMax: time.Minute, Cursor: "42"}, ""},
		{"negative BackoffMin", Options{BackoffMin: -1}, "Options.BackoffMin"},
		{"negative BackoffMax", Options{BackoffMax: -time.Second}, "Options.BackoffMax"},
		{"BackoffMax below BackoffMin", Options{BackoffMin: time.Minute, BackoffMax: time.Second}, "Options.BackoffMax (1s) is less than Options.BackoffMin (1m0s)"},
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
	got := []any{c.opts.BackoffMin, c.opts.BackoffMax, c.opts.Implementation.Name, c.opts.Clock != nil}
	want := []any{10 * time.Millisecond, 10 * time.Millisecond, "mcpe-client", true}
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
