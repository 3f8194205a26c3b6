package main

import (
	"context"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/postgres"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// openStore opens the store that db names: a postgres:// or postgresql://
// URL selects PostgreSQL, anything else is an SQLite database path (or
// ":memory:"). It also returns how to name the database in logs: a URL
// without its password.
func openStore(ctx context.Context, db string) (subscriptions.Store, string, error) {
	if postgres.IsURL(db) {
		s, err := postgres.Open(ctx, db)
		if err != nil {
			return nil, "", err
		}
		return s, postgres.Redact(db), nil
	}
	s, err := sqlite.Open(ctx, db)
	if err != nil {
		return nil, "", err
	}
	return s, db, nil
}
