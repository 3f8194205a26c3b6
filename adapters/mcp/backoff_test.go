package mcp

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBackoffSchedule(t *testing.T) {
	fixed := func(r float64) func() float64 { return func() float64 { return r } }
	const s = time.Second
	for _, tc := range []struct {
		name string
		b    backoff
		want []time.Duration // delays of retries 1, 2, ...
	}{
		{
			name: "no jitter doubles up to the cap",
			b:    backoff{min: s, max: 10 * s},
			want: []time.Duration{s, 2 * s, 4 * s, 8 * s, 10 * s, 10 * s},
		},
		{
			name: "middle of the jitter range is the plain delay",
			b:    backoff{min: s, max: 10 * s, jitter: 0.2, rand: fixed(0.5)},
			want: []time.Duration{s, 2 * s, 4 * s, 8 * s, 10 * s},
		},
		{
			name: "lowest jitter, kept at or above min",
			b:    backoff{min: s, max: 10 * s, jitter: 0.2, rand: fixed(0)},
			want: []time.Duration{s, 1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 8 * s},
		},
		{
			name: "highest jitter, kept at or below max",
			b:    backoff{min: s, max: 10 * s, jitter: 0.2, rand: fixed(1)},
			want: []time.Duration{1200 * time.Millisecond, 2400 * time.Millisecond, 4800 * time.Millisecond, 9600 * time.Millisecond, 10 * s},
		},
		{
			name: "min equals max",
			b:    backoff{min: 3 * s, max: 3 * s, jitter: 0.5, rand: fixed(0.9)},
			want: []time.Duration{3 * s, 3 * s},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []time.Duration
			for n := 1; n <= len(tc.want); n++ {
				got = append(got, tc.b.delay(n))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("delays mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBackoffBounds(t *testing.T) {
	// With real randomness every delay stays within the jittered
	// exponential and within [min, max], even for huge retry counts.
	b := backoff{min: time.Second, max: 5 * time.Minute, jitter: 0.2, rand: rand.Float64}
	for n := 1; n <= 200; n++ {
		plain := backoff{min: b.min, max: b.max}.delay(n)
		for range 20 {
			d := b.delay(n)
			lo := max(b.min, time.Duration(float64(plain)*0.8))
			hi := min(b.max, time.Duration(float64(plain)*1.2))
			if d < lo || d > hi {
				t.Fatalf("delay(%d) = %v; want within [%v, %v]", n, d, lo, hi)
			}
		}
	}
	huge := backoff{min: time.Second, max: time.Duration(1 << 62)}
	if d := huge.delay(1000); d != huge.max {
		t.Errorf("delay(1000) with a huge cap = %v; want the cap %v (no overflow)", d, huge.max)
	}
}

func TestRetrierReset(t *testing.T) {
	r := retrier{backoff: backoff{min: time.Second, max: time.Minute}}
	var got []time.Duration
	for _, upFor := range []time.Duration{
		0,                // connection failed
		0,                // again
		10 * time.Second, // up briefly: keeps growing
		0,
		stableAfter, // up long enough: starts over
		0,
	} {
		got = append(got, r.failed(upFor))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, time.Second, 2 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays mismatch (-want +got):\n%s", diff)
	}
}
