package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/internal/pgtest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions/postgres"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// TestOpenStoreChoosesByValue checks that a postgres:// or postgresql://
// URL opens PostgreSQL and anything else an SQLite file.
func TestOpenStoreChoosesByValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	s, name, err := openStore(t.Context(), path)
	if err != nil {
		t.Fatalf("openStore(%q): %v", path, err)
	}
	s.Close()
	if _, ok := s.(*sqlite.Store); !ok || name != path {
		t.Errorf("openStore(%q) = %T, %q; want *sqlite.Store, the path", path, s, name)
	}

	url := pgtest.Database(t)
	for _, u := range []string{url, "postgresql" + strings.TrimPrefix(url, "postgres")} {
		s, name, err := openStore(t.Context(), u)
		if err != nil {
			t.Fatalf("openStore(%q): %v", u, err)
		}
		s.Close()
		if _, ok := s.(*postgres.Store); !ok || name != u {
			t.Errorf("openStore(%q) = %T, %q; want *postgres.Store, the URL", u, s, name)
		}
	}
}

// TestOpenStorePostgresErrors checks that a URL that cannot be parsed or
// reached is refused with the host named and the password hidden.
func TestOpenStorePostgresErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for _, tt := range []struct {
		url  string
		want []string
	}{
		{"postgres://mcpe:s3cret@127.0.0.1:1/events?connect_timeout=5", []string{"cannot reach", "127.0.0.1", "port 1", `"events"`}},
		{"postgres://mcpe:s3cret@db.invalid/events?connect_timeout=5", []string{"cannot reach", "db.invalid"}},
		{"postgres://mcpe:s3cret@host:notaport/events", []string{"cannot parse", "host"}},
	} {
		_, _, err := openStore(ctx, tt.url)
		if err == nil {
			t.Errorf("openStore(%q) succeeded", tt.url)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "s3cret") {
			t.Errorf("openStore(%q) error shows the password: %s", tt.url, msg)
		}
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("openStore(%q) error %q does not say %q", tt.url, msg, w)
			}
		}
	}
}

// TestStdioRestartOnPostgres runs the server on PostgreSQL twice: what the
// first run stored, the second finds.
func TestStdioRestartOnPostgres(t *testing.T) {
	db := pgtest.Database(t)
	c, base := startStdio(t, db, nil)
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"ci.*"}}})
	post(t, base, "", `{"type": "ci.failed", "data": {"run": 1}}`)
	c.NextEvent(t)
	c.Session.Close()

	c2, _ := startStdio(t, db, nil)
	var list mcpe.ListResult
	c2.MustCall(t, "events_list", map[string]any{}, &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].ID != sub.ID || list.Subscriptions[0].DeliveredCount != 1 {
		t.Fatalf("after restart: %+v", list.Subscriptions)
	}
	var poll mcpe.PollResult
	c2.MustCall(t, "events_poll", map[string]any{}, &poll)
	if len(poll.Items) != 1 || !strings.Contains(string(poll.Items[0].Event), `"run":1`) {
		t.Fatalf("inbox after restart: %+v", poll.Items)
	}
}
