package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
	"github.com/mcpe-server/mcpe-server/subscriptions/storetest"
)

// The store benchmarks (storetest.Bench*) on a file database.

func BenchmarkStore(b *testing.B) { storetest.Bench(b, openBench) }

// openBench opens a file database in b's temporary directory.
func openBench(b *testing.B) subscriptions.Store {
	b.Helper()
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
