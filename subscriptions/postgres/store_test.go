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

// open opens the database at url and closes it when t ends.
func open(t *testing.T, url string) *postgres.Store {
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
