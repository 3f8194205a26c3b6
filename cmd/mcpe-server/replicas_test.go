package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/internal/pgtest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// This file runs several servers on one database, as replicas do: what one
// accepts reaches sessions held by another, a digest fires once, a handler
// run happens once, and a client that loses its server catches up through
// another.

// databases are the stores several servers can share.
var databases = []struct {
	name string
	open func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "mcpe.db") }},
	{"postgres", func(t *testing.T) string { return pgtest.Database(t) }},
}

// replicaConfig follows the database every 10ms, fires cron digests every
// second, lets the webhook handler reach rcv on loopback, and gives the
// principal "team" a bearer token.
func replicaConfig(t *testing.T) string {
	return writeConfig(t, `
auth:
  tokens:
    - principal: team
      token: team-token
subscriptions:
  minEvery: 1s
handlers:
  webhook:
    enabled: true
    allowHTTP: true
    allowNetworks: ["127.0.0.1"]
`)
}

// routedEverywhere posts events of typ to each of bases until one reaches
// c from each: then every server routes by c's subscription to typ. What c
// received meanwhile is dropped.
func routedEverywhere(t *testing.T, c *mcpetest.Client, typ string, bases ...string) {
	t.Helper()
	for _, base := range bases {
		got := false
		for i := 0; i < 300 && !got; i++ {
			if code, body := post(t, base, "team-token", fmt.Sprintf(`{"type":%q,"data":{"probe":%d}}`, typ, i)); code != 202 {
				t.Fatalf("POST to %s = %d %s", base, code, body)
			}
			for deadline := time.Now().Add(30 * time.Millisecond); time.Now().Before(deadline) && !got; time.Sleep(3 * time.Millisecond) {
				for _, n := range c.Pending() {
					got = got || n.Method == mcpe.MethodEvent
				}
			}
		}
		if !got {
			t.Fatalf("%s never routed %s by a subscription made through another server", base, typ)
		}
	}
	time.Sleep(50 * time.Millisecond) // probes still on their way
	c.Pending()
}

func TestReplicas(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) { testReplicas(t, db.open(t)) })
	}
}

func testReplicas(t *testing.T, db string) {
	rcv := newReceiver(t)
	cfg := replicaConfig(t)
	baseA, cmdA, _ := startHTTPServer(t, "--db", db, "--config", cfg)
	baseC, _, _ := startHTTPServer(t, "--db", db, "--config", cfg)
	baseB, _, _ := startHTTPServer(t, "--db", db, "--config", cfg)
	b := httpClient(t, baseB, "team-token")

	// Events posted to A and C reach a session on B, each once, in the
	// order each server accepted them.
	b.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"deploy.*"}}})
	routedEverywhere(t, b, "deploy.probe", baseA, baseC)
	for i := range 10 {
		base := []string{baseA, baseC}[i%2]
		if code, body := post(t, base, "team-token", fmt.Sprintf(`{"type":"deploy.done","data":{"n":%d}}`, i)); code != 202 {
			t.Fatalf("POST = %d %s", code, body)
		}
	}
	var got []int
	for range 10 {
		_, ev := b.NextEvent(t)
		var d struct{ N int }
		json.Unmarshal(ev.Data, &d)
		got = append(got, d.N)
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Fatalf("B's session got %v; want each of %v once, in the order they were accepted", got, want)
	}

	// A cron digest fires once, though every server's scheduler sees it
	// due; the servers without a session of its owner leave it to B.
	digest := b.Subscribe(t, map[string]any{
		"filter":   map[string]any{"eventTypes": []string{"build.*"}},
		"delivery": map[string]any{"channels": []string{"cron"}, "cronSchedule": map[string]any{"expression": "@every 1s"}},
	})
	routedEverywhere(t, b, "deploy.probe", baseA, baseC) // both have followed by now
	for i := range 3 {
		post(t, []string{baseA, baseC, baseA}[i], "team-token", fmt.Sprintf(`{"type":"build.failed","data":{"n":%d}}`, i))
	}
	var inDigests []string
	for deadline := time.Now().Add(10 * time.Second); len(inDigests) < 3 && time.Now().Before(deadline); {
		p := nextBatch(t, b)
		if p.SubscriptionID != digest.ID {
			t.Fatalf("a batch for %s; want %s", p.SubscriptionID, digest.ID)
		}
		inDigests = append(inDigests, batchData(t, p)...)
	}
	time.Sleep(2500 * time.Millisecond) // two more fires: nothing may come again
	for _, n := range b.Pending() {
		if n.Method == mcpe.MethodBatch {
			var p mcpe.BatchParams
			json.Unmarshal(n.Params, &p)
			inDigests = append(inDigests, batchData(t, p)...)
		}
	}
	slices.Sort(inDigests)
	if want := []string{`{"n":0}`, `{"n":1}`, `{"n":2}`}; !slices.Equal(inDigests, want) {
		t.Fatalf("the digests carried %v; want each of %v once", inDigests, want)
	}

	// A handler run happens once, whichever server's runner sees it.
	webhookSubscribe(t, b, rcv, "ship.*")
	routedEverywhere(t, b, "deploy.probe", baseA, baseC)
	for i := range 6 {
		post(t, []string{baseA, baseC, baseB}[i%3], "team-token", fmt.Sprintf(`{"type":"ship.done","data":{"n":%d}}`, i))
	}
	for range 6 {
		rcv.wait(t)
	}
	time.Sleep(500 * time.Millisecond)
	rcv.mu.Lock()
	delivered, bad := slices.Clone(rcv.got), slices.Clone(rcv.bad)
	rcv.mu.Unlock()
	if len(bad) > 0 || len(delivered) != 6 {
		t.Fatalf("the receiver verified %d deliveries (%d refused: %v); want 6, one per event", len(delivered), len(bad), bad)
	}
	ns := map[string]bool{}
	for _, body := range delivered {
		for _, m := range dataN.FindAllStringSubmatch(body, -1) {
			ns[m[1]] = true
		}
	}
	if len(ns) != 6 {
		t.Fatalf("the 6 deliveries carried %d distinct events (%v); want 6", len(ns), delivered)
	}

	// A client whose server dies connects to another with the same token
	// and finds in events_poll everything accepted meanwhile.
	a := httpClient(t, baseA, "team-token")
	var before mcpe.PollResult
	a.MustCall(t, "events_poll", map[string]any{}, &before)
	if err := cmdA.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		post(t, baseC, "team-token", fmt.Sprintf(`{"type":"deploy.after","data":{"n":%d}}`, i))
	}
	c := httpClient(t, baseC, "team-token")
	var after mcpe.PollResult
	c.MustCall(t, "events_poll", map[string]any{"cursor": before.NextCursor}, &after)
	var types []string
	for _, it := range after.Items {
		var ev mcpe.Event
		json.Unmarshal(it.Event, &ev)
		types = append(types, ev.Type)
	}
	if n := strings.Count(strings.Join(types, " "), "deploy.after"); n != 3 {
		t.Fatalf("events_poll from the cursor given by the server that died returned %v; want the 3 events accepted since", types)
	}
}

// dataN finds the "n" of an event's data in a webhook body.
var dataN = regexp.MustCompile(`"n":\s*(\d+)`)

// webhookSubscribe subscribes c to typ with a webhook handler posting to
// rcv, and gives rcv the signing secret the server made.
func webhookSubscribe(t *testing.T, c *mcpetest.Client, rcv *receiver, typ string) {
	t.Helper()
	sub := c.Subscribe(t, map[string]any{
		"filter":  map[string]any{"eventTypes": []string{typ}},
		"handler": map[string]any{"type": "webhook", "url": rcv.URL + "/hook"},
	})
	if sub.Handler == nil || !strings.HasPrefix(sub.Handler.Secret, "whsec_") {
		t.Fatalf("events_subscribe did not return the signing secret: %+v", sub.Handler)
	}
	rcv.mu.Lock()
	rcv.secret = sub.Handler.Secret
	rcv.mu.Unlock()
}

// TestHandlerRunOutlivesItsServer kills the server that is running a
// handler (its webhook receiver holds the request), and expects another
// server on the same database to run it once its lease is over, with the
// same webhook-id: at least once, never lost.
func TestHandlerRunOutlivesItsServer(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) { testHandlerRunOutlivesItsServer(t, db.open(t)) })
	}
}

func testHandlerRunOutlivesItsServer(t *testing.T, db string) {
	var (
		mu      sync.Mutex
		ids     []string
		release = make(chan struct{})
		arrived = make(chan struct{}, 4)
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		ids = append(ids, r.Header.Get("webhook-id"))
		first := len(ids) == 1
		mu.Unlock()
		arrived <- struct{}{}
		if first {
			// The first attempt hangs until its server is gone.
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(func() { close(release); rcv.Close() })
	// A run may take 1s: the lease is 5 x 1s + 1s.
	cfg := writeConfig(t, `
auth:
  tokens:
    - principal: team
      token: team-token
handlers:
  runTimeout: 1s
  webhook:
    enabled: true
    allowHTTP: true
    allowNetworks: ["127.0.0.1"]
`)
	baseA, cmdA, _ := startHTTPServer(t, "--db", db, "--config", cfg)
	a := httpClient(t, baseA, "team-token")
	a.Subscribe(t, map[string]any{
		"filter":  map[string]any{"eventTypes": []string{"deploy.*"}},
		"handler": map[string]any{"type": "webhook", "url": rcv.URL + "/hook"},
	})
	if code, body := post(t, baseA, "team-token", `{"type":"deploy.failed","data":{}}`); code != 202 {
		t.Fatalf("POST = %d %s", code, body)
	}
	select {
	case <-arrived:
	case <-time.After(mcpetest.Wait):
		t.Fatal("the first server did not run the handler")
	}
	// The second server starts while the first holds the run, then the
	// first is killed mid-run.
	startHTTPServer(t, "--db", db, "--config", cfg)
	if err := cmdA.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatal("no other server ran the handler after the one running it was killed")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 2 || ids[0] == "" || ids[0] != ids[1] {
		t.Fatalf("webhook-ids of the attempts: %q; want two attempts of one delivery, with the same id", ids)
	}
}

// TestDigestsOnceWhileServersAreKilled has two servers fire the digests of
// 50 cron subscriptions every second while one of them is killed with
// SIGKILL, again and again, and started again: a fire is one transaction
// with the move of the subscription's next fire, so a server killed in the
// middle of one leaves it whole to the other. Every event reaches each
// subscription's digests exactly once.
func TestDigestsOnceWhileServersAreKilled(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) { testDigestsOnceWhileKilled(t, db.open(t)) })
	}
}

func testDigestsOnceWhileKilled(t *testing.T, db string) {
	cfg := writeConfig(t, `
auth:
  tokens:
    - principal: team
      token: team-token
subscriptions:
  minEvery: 1s
`)
	baseB, _, _ := startHTTPServer(t, "--db", db, "--config", cfg)
	b := httpClient(t, baseB, "team-token")
	const subs, events = 50, 12
	ids := map[string]bool{}
	for range subs {
		sub := b.Subscribe(t, map[string]any{
			"filter":   map[string]any{"eventTypes": []string{"build.*"}},
			"delivery": map[string]any{"channels": []string{"cron"}, "cronSchedule": map[string]any{"expression": "@every 1s"}},
		})
		ids[sub.ID] = true
	}
	baseA, cmdA, _ := startHTTPServer(t, "--db", db, "--config", cfg)
	for i := range events {
		if code, body := post(t, []string{baseA, baseB}[i%2], "team-token", fmt.Sprintf(`{"type":"build.done","data":{"n":%d}}`, i)); code != 202 {
			t.Fatalf("POST = %d %s", code, body)
		}
		if i%4 == 3 {
			// Kill the other server at some point of its fires, and start
			// it again.
			time.Sleep(time.Duration(300+i*37) * time.Millisecond)
			cmdA.Process.Kill()
			baseA, cmdA, _ = startHTTPServer(t, "--db", db, "--config", cfg)
		}
	}
	got := map[string][]string{}
	want := subs * events
	total := 0
	for deadline := time.Now().Add(20 * time.Second); total < want && time.Now().Before(deadline); {
		pending := b.Pending()
		if len(pending) == 0 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for _, n := range pending {
			if n.Method != mcpe.MethodBatch {
				continue
			}
			var p mcpe.BatchParams
			if err := json.Unmarshal(n.Params, &p); err != nil {
				t.Fatal(err)
			}
			if !ids[p.SubscriptionID] {
				t.Fatalf("a digest for %s, not one of the test's", p.SubscriptionID)
			}
			data := batchData(t, p)
			got[p.SubscriptionID] = append(got[p.SubscriptionID], data...)
			total += len(data)
		}
	}
	time.Sleep(1500 * time.Millisecond) // one more fire: nothing may come again
	for _, n := range b.Pending() {
		if n.Method == mcpe.MethodBatch {
			var p mcpe.BatchParams
			json.Unmarshal(n.Params, &p)
			got[p.SubscriptionID] = append(got[p.SubscriptionID], batchData(t, p)...)
		}
	}
	for id := range ids {
		seen := map[string]int{}
		for _, d := range got[id] {
			seen[d]++
		}
		if len(seen) != events {
			t.Errorf("subscription %s got %d distinct events in its digests; want %d", id, len(seen), events)
		}
		for d, k := range seen {
			if k != 1 {
				t.Errorf("subscription %s got %s %d times", id, d, k)
			}
		}
	}
}
