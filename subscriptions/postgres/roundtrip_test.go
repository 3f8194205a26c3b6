package postgres_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/internal/pgtest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/postgres"
	"github.com/mcpe-server/mcpe-server/subscriptions/storetest"
)

// roundTrips is a loopback proxy to the database that counts the round
// trips its clients ask for: the messages that make the server answer and
// wait for the next request (Sync ends an extended-protocol batch, Query is
// a simple query).
type roundTrips struct {
	url string
	n   atomic.Int64
	// cut, when not 0, is the round trip at which the proxy closes the
	// connection instead of forwarding it.
	cut atomic.Int64
}

func proxy(t *testing.T, url string) *roundTrips {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	network, addr := "tcp", fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
	if cfg.Host[0] == '/' {
		network, addr = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	rt := &roundTrips{url: fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", cfg.User, ln.Addr(), cfg.Database)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial(network, addr)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(c, s); c.Close() }()
			go func() { rt.forward(s, c); s.Close() }()
		}
	}()
	return rt
}

// forward copies what a client sends, message by message, counting round
// trips; the first messages (startup, or a request for TLS) have no type.
func (rt *roundTrips) forward(to io.Writer, from io.Reader) {
	r := bufio.NewReader(from)
	typed := false
	for {
		var typ byte
		if typed {
			b, err := r.ReadByte()
			if err != nil {
				return
			}
			typ = b
		}
		var head [4]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(head[:])-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if typ == 'S' || typ == 'Q' {
			if n := rt.n.Add(1); n == rt.cut.Load() {
				return
			}
		}
		msg := append(append([]byte{}, typ), head[:]...)
		if !typed {
			msg = head[:]
			// A startup message, not a TLS or GSS request, ends the untyped ones.
			typed = len(body) < 4 || binary.BigEndian.Uint32(body) != 80877103 && binary.BigEndian.Uint32(body) != 80877104
		}
		if _, err := to.Write(append(msg, body...)); err != nil {
			return
		}
	}
}

// proxied opens a store of one connection through a proxy, with a
// subscription of alice's: the target of its publishes.
func proxied(t *testing.T) (*roundTrips, *postgres.Store, []subscriptions.Target) {
	rt := proxy(t, pgtest.Database(t))
	s, err := postgres.OpenWith(t.Context(), rt.url, &postgres.Options{MaxConns: 1, HealthEvery: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sub := newSub(1, "alice")
	if err := s.CreateSubscription(t.Context(), sub, 10); err != nil {
		t.Fatal(err)
	}
	return rt, s, []subscriptions.Target{{SubscriptionID: sub.ID, Principal: "alice", Channel: mcpe.ChannelRealtime}}
}

// TestPublishRoundTrips checks that a publish is one round trip: BEGIN,
// its principals' rows taken, its events and their inbox rows written,
// COMMIT. Every other publish to those principals, from any server, waits
// for the rows from then until the commit, so each round trip more would be
// a wait more for all of them.
func TestPublishRoundTrips(t *testing.T) {
	rt, s, target := proxied(t)
	routed, err := s.Deactivations(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The first publish prepares its statements; the second is counted.
	for i := 1; i <= 2; i++ {
		before := rt.n.Load()
		ev, raw := newEvent(i)
		res, err := s.Publish(t.Context(), subscriptions.PublishBatch{Now: t0, Deactivations: routed,
			Publications: []subscriptions.Publication{{Event: ev, Raw: raw, Targets: target}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res[0].Delivered) != 1 || res[0].Delivered[0].Seq == 0 {
			t.Fatalf("publish %d delivered %+v; want one numbered entry", i, res[0].Delivered)
		}
		if n := rt.n.Load() - before; i == 2 && n != 1 {
			t.Errorf("a publish took %d round trips; want 1", n)
		}
	}
}

// TestPublishCommittedDuplicateLookupFails checks that a publish of a
// duplicate whose commit went through does not fail when the connection
// drops as it reads the first ID after the commit: the duplicate is
// reported as one, with its own ID.
func TestPublishCommittedDuplicateLookupFails(t *testing.T) {
	rt, s, target := proxied(t)
	ev, raw := newEvent(1)
	for i := range 2 {
		routed, err := s.Deactivations(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			rt.cut.Store(rt.n.Load() + 2) // the round trip after the publish's
		}
		res, err := s.Publish(t.Context(), subscriptions.PublishBatch{Now: t0, Deactivations: routed,
			Publications: []subscriptions.Publication{{Event: ev, Raw: raw, Targets: target}}})
		if err != nil || res[0].Duplicate != (i == 1) || res[0].EventID != ev.ID {
			t.Fatalf("publish %d = %+v, %v; want it stored, then a duplicate with its ID", i, res, err)
		}
	}
	if got := rt.n.Load(); rt.cut.Load() != got {
		t.Fatalf("the proxy saw %d round trips; the cut was at %d", got, rt.cut.Load())
	}
}

// TestPublishFailureRollsBack checks that a publish whose last round trip
// fails (here a trigger refuses the inbox row) leaves nothing behind: its
// event is not stored, and the connection serves the next publish.
func TestPublishFailureRollsBack(t *testing.T) {
	url := pgtest.Database(t)
	s, err := postgres.OpenWith(t.Context(), url, &postgres.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	exec(t, url, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON inbox FOR EACH ROW EXECUTE FUNCTION refuse()`)
	sub := newSub(1, "alice")
	if err := s.CreateSubscription(t.Context(), sub, 10); err != nil {
		t.Fatal(err)
	}
	target := []subscriptions.Target{{SubscriptionID: sub.ID, Principal: "alice", Channel: mcpe.ChannelRealtime}}
	ev, raw := newEvent(1)
	if _, err := storetest.PublishOne(t.Context(), s, ev, raw, target, t0); err == nil {
		t.Fatal("a publish whose inbox row was refused succeeded")
	}
	exec(t, url, `DROP TRIGGER refuse ON inbox`)
	res, err := storetest.PublishOne(t.Context(), s, ev, raw, target, t0)
	if err != nil || res.Duplicate || len(res.Delivered) != 1 {
		t.Fatalf("publishing the event again = %+v, %v; want it stored and delivered, as the failed one left nothing", res, err)
	}
}
