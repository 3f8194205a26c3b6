package sqlite_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpe-server/mcpe-server/subscriptions/storetest"
)

// TestMigrationScopesDedupBySource opens a database made by the migrations
// before 0011, whose events were deduplicated by type and sourceEventId
// alone, with events in it: each is then deduplicated among the events of
// the source that posts its type.
func TestMigrationScopesDedupBySource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(names) < 11 || filepath.Base(names[10]) != "0011_dedup_by_source.sql" {
		t.Fatalf("migrations: %v, %v", names, err)
	}
	for _, name := range names[:10] {
		body, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(t.Context(), string(body)); err != nil {
			t.Fatalf("apply %s: %v", name, err)
		}
	}
	if _, err := db.ExecContext(t.Context(), `PRAGMA user_version = 10`); err != nil {
		t.Fatal(err)
	}
	for _, ev := range storetest.LegacyEvents {
		if _, err := db.ExecContext(t.Context(), `INSERT INTO events (id, type, source_event_id, body, received_at)
			VALUES (?, ?, ?, '{}', 1)`, ev[0], ev[1], ev[2]); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	storetest.CheckLegacyDedup(t, open(t, path))
}
