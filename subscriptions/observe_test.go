package subscriptions_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// observer records what the Service reports.
type observer struct {
	mu    sync.Mutex
	ops   map[string]int
	fires []string
}

func (o *observer) StoreOp(op string, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ops == nil {
		o.ops = map[string]int{}
	}
	if err == nil {
		o.ops[op]++
	}
}

func (o *observer) Fired(c mcpe.Channel, late time.Duration, missed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	what := "on time"
	if missed {
		what = "missed"
	}
	o.fires = append(o.fires, string(c)+" "+what+" late "+late.String())
}

func TestObserverHearsCommitsAndFires(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	start := time.Date(2026, 3, 2, 8, 30, 0, 0, time.UTC)
	obs := &observer{}
	opts := timedOptions(&presence{})
	opts.Observer = obs
	f := newFixture(t, path, clocktest.NewFake(start), opts)
	f.subscribe("alice", cronReq("0 * * * *", "", "x"))
	f.publishN("x", 1)
	f.publishN("x", 2)
	f.clock.AdvanceTo(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	f.stop()

	// Down from 09:00 to 13:10: the 10:00 to 13:00 fires were missed, and
	// the one that runs at start stands for them, 3h10m after its due time.
	obs2 := &observer{}
	opts = timedOptions(&presence{})
	opts.Observer = obs2
	f2 := newFixture(t, path, clocktest.NewFake(start.Add(4*time.Hour+40*time.Minute)), opts)
	f2.stop()

	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.ops["publish"] != 2 || obs.ops["fire"] != 1 {
		t.Errorf("store writes observed = %v; want 2 publish and 1 fire", obs.ops)
	}
	if diff := cmp.Diff([]string{"cron on time late 0s"}, obs.fires); diff != "" {
		t.Errorf("fires mismatch (-want +got):\n%s", diff)
	}
	obs2.mu.Lock()
	defer obs2.mu.Unlock()
	if diff := cmp.Diff([]string{"cron missed late 3h10m0s"}, obs2.fires); diff != "" {
		t.Errorf("fires after the downtime mismatch (-want +got):\n%s", diff)
	}
}
