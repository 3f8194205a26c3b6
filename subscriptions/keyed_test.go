package subscriptions_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// TestKeyedTimesAreWhatStoresKeep checks that a keyed subscription is made
// with times every store keeps exactly (whole microseconds: PostgreSQL's
// timestamptz), so that the subscription handed back when it is made is the
// one read back later: SEP-3415 cursors are bound to its creation time.
func TestKeyedTimesAreWhatStoresKeep(t *testing.T) {
	clk := clocktest.NewFake(svcStart.Add(123456789 * time.Nanosecond))
	f := newFixture(t, filepath.Join(t.TempDir(), "x.db"), clk, subscriptions.ServiceOptions{})
	made, created, err := f.svc.Keyed(context.Background(), "alice", "sep-00000000000000000000000000000001", mcpe.Filter{EventTypes: []string{"x.*"}})
	if err != nil || !created {
		t.Fatalf("Keyed = %v, created %v", err, created)
	}
	if !made.CreatedAt.Equal(made.CreatedAt.Truncate(time.Microsecond)) {
		t.Fatalf("CreatedAt %v has a part below the microsecond, which PostgreSQL does not keep", made.CreatedAt)
	}
	again, created, err := f.svc.Keyed(context.Background(), "alice", made.ID, made.Filter)
	if err != nil || created || !again.CreatedAt.Equal(made.CreatedAt) {
		t.Fatalf("Keyed again = %v (created %v, err %v); want the same subscription", again.CreatedAt, created, err)
	}
}
