package postgres_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpe-server/mcpe-server/internal/pgtest"
	"github.com/mcpe-server/mcpe-server/subscriptions/storetest"
)

// TestMigrationScopesDedupBySource opens a database made by the migrations
// before 0005, whose events were deduplicated by type and sourceEventId
// alone, with events in it: each is then deduplicated among the events of
// the source that posts its type.
func TestMigrationScopesDedupBySource(t *testing.T) {
	url := pgtest.Database(t)
	names, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(names) < 5 || filepath.Base(names[4]) != "0005_dedup_by_source.sql" {
		t.Fatalf("migrations: %v, %v", names, err)
	}
	exec(t, url, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`)
	for i, name := range names[:4] {
		body, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		exec(t, url, string(body))
		exec(t, url, fmt.Sprintf(`INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')`, i+1, filepath.Base(name)))
	}
	for _, ev := range storetest.LegacyEvents {
		exec(t, url, `INSERT INTO events (id, type, source_event_id, body, received_at)
			VALUES ($1, $2, $3, '{}', now())`, ev[0], ev[1], ev[2])
	}

	storetest.CheckLegacyDedup(t, open(t, url))
}
