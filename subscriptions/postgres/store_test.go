package postgres_test

import (
	"os"
	"testing"

	"github.com/mcpe-server/mcpe-server/internal/pgtest"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/postgres"
	"github.com/mcpe-server/mcpe-server/subscriptions/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) subscriptions.Store {
		return open(t, pgtest.Database(t))
	})
}

// BenchmarkStore runs the store benchmarks (storetest.Bench) on a database
// of the test cluster.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) subscriptions.Store { return open(b, pgtest.Database(b)) })
}

// open opens the database at url and closes it when t ends.
func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestSharedStore(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (a, b storetest.SharedStore) {
		url := pgtest.Database(t)
		return open(t, url), open(t, url)
	})
}
