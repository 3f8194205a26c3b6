package delivery_test

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/mcpe-server/mcpe-server/internal/pgtest"
	"github.com/mcpe-server/mcpe-server/subscriptions/postgres"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestDeliveryModelPostgres runs the model of model_test.go on PostgreSQL:
// one to three servers on one database, as replicas share it (each follows
// the other through LISTEN/NOTIFY and its polls). Each run starts on an
// empty schema. A step is a round trip to the database or more, so it
// runs fewer sequences than on SQLite unless -rapid.checks says.
func TestDeliveryModelPostgres(t *testing.T) {
	url := pgtest.Database(t)
	checks := "25"
	if raceChecks != "" {
		checks = "8"
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		old := flag.Lookup("rapid.checks").Value.String()
		if err := flag.Set("rapid.checks", checks); err != nil {
			t.Fatal(err)
		}
		defer flag.Set("rapid.checks", old)
	}
	admin, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	// A run opens its first store on a new dir: the schema is emptied
	// then, once the last run's servers have stopped.
	var last string
	open := func(dir string) (modelStore, error) {
		if dir != last {
			last = dir
			if _, err := admin.Exec(context.Background(), `DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
				return nil, err
			}
		}
		return postgres.Open(context.Background(), url)
	}
	rapid.Check(t, runModel(open))
}
