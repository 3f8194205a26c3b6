// Package storecore is the logic the SQLite and PostgreSQL stores share,
// written once: each store supplies its statements through a driver, as
// River's drivers do.
package storecore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// A fire is set-based: whatever the number of subscriptions in one Fire
// call, it runs a fixed handful of statements (claim the active
// subscriptions, take their oldest waiting events, drop them from the
// buffers, write the inbox entries, expire), so that thousands of digests
// falling in the same minute cost milliseconds each, not a round of
// statements each.

// FireDriver runs a fire's statements in the transaction the fire is part
// of, which keeps every other write to the buffers it reads out until it
// ends.
type FireDriver interface {
	// Claim records the fire of the active subscriptions among reqs, with
	// their next fire (a request with a Due only while the next fire is
	// still that), and returns their IDs.
	Claim(reqs []subscriptions.FireRequest, now time.Time) ([]string, error)
	// Count calls set with how many events wait for each of ids that has any.
	Count(ids []string, set func(id string, n int)) error
	// Take passes to read the rows (subscription, seq, event) of the whole
	// buffers of whole, and of the oldest Max events of each of some, in
	// order of seq within a buffer.
	Take(whole []string, some []subscriptions.FireRequest, read func(sub string, seq int64, eventID string)) error
	// Bodies sets the body of each event named in bodies that is still kept.
	Bodies(bodies map[string]json.RawMessage) error
	// Drop deletes the whole buffers of whole, and of the others the
	// events up to a seq.
	Drop(whole []string, some []Cut) error
	// DrawSeqs draws a new inbox number for each entry of the principals
	// listed, in that order.
	DrawSeqs(principals []string) ([]int64, error)
	// Insert writes inbox entries made at now.
	Insert(entries []Delivery, now time.Time) error
	// Expire expires the subscriptions ids.
	Expire(ids []string, now time.Time) error
}

// Cut is where the events a fire takes from one buffer end.
type Cut struct {
	SubscriptionID string
	Seq            int64
}

// Fire delivers reqs through d. With claim, only active subscriptions are
// served and their last and next fire are recorded; without, every request
// is (the caller has just expired them).
func Fire(d FireDriver, reqs []subscriptions.FireRequest, now time.Time, claim bool) ([]subscriptions.FireResult, error) {
	ft := &fireTx{d: d, now: now.UTC(), reqs: reqs, took: make(map[string]*waiting, len(reqs))}
	if len(reqs) == 0 {
		return ft.results(), nil
	}
	steps := []func() error{ft.take, ft.drop, ft.write}
	if claim {
		steps = append([]func() error{ft.claim}, steps...)
	} else {
		for _, r := range reqs {
			ft.took[r.SubscriptionID] = &waiting{}
		}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return ft.results(), nil
}

// fireTx is one fire in progress.
type fireTx struct {
	d    FireDriver
	now  time.Time
	reqs []subscriptions.FireRequest
	// took is what each served subscription takes from its buffer; a
	// request whose subscription is not served has none.
	took map[string]*waiting
	// whole and some are the served requests that take their whole buffer,
	// and those that take only its oldest Max events.
	whole []string
	some  []subscriptions.FireRequest
	// bodies are the taken events' bodies, by ID.
	bodies map[string]json.RawMessage
	// entries are the inbox entries written, by request.
	entries [][]subscriptions.InboxEntry
}

// waiting is what one subscription takes from its buffer.
type waiting struct {
	ids    []string
	events []json.RawMessage
	taken  int
	total  int
	last   int64 // the seq of the last event taken
}

// claim serves the active subscriptions among the requests.
func (ft *fireTx) claim() error {
	ids, err := ft.d.Claim(ft.reqs, ft.now)
	if err != nil {
		return fmt.Errorf("claim subscriptions: %w", err)
	}
	for _, id := range ids {
		ft.took[id] = &waiting{}
	}
	return nil
}

// take counts each served buffer, reads whole the buffers that go whole
// and the oldest events of the others, and reads the body of each event
// once.
func (ft *fireTx) take() error {
	var served []string
	for _, r := range ft.reqs {
		if ft.took[r.SubscriptionID] != nil {
			served = append(served, r.SubscriptionID)
		}
	}
	if len(served) > 0 {
		if err := ft.d.Count(served, func(id string, n int) { ft.took[id].total = n }); err != nil {
			return fmt.Errorf("count buffers: %w", err)
		}
	}
	for _, r := range ft.reqs {
		w := ft.took[r.SubscriptionID]
		switch {
		case w == nil || w.total == 0:
		case r.Drain || r.Max <= 0 || w.total <= r.Max:
			ft.whole = append(ft.whole, r.SubscriptionID)
		default:
			ft.some = append(ft.some, r)
		}
	}
	ft.bodies = make(map[string]json.RawMessage)
	if len(ft.whole) == 0 && len(ft.some) == 0 {
		return nil
	}
	if err := ft.d.Take(ft.whole, ft.some, func(sub string, seq int64, eventID string) {
		w := ft.took[sub]
		w.taken++
		w.ids = append(w.ids, eventID)
		w.last = seq
		ft.bodies[eventID] = nil
	}); err != nil {
		return fmt.Errorf("read buffers: %w", err)
	}
	if len(ft.bodies) == 0 {
		return nil
	}
	if err := ft.d.Bodies(ft.bodies); err != nil {
		return err
	}
	// An event retention removed is skipped.
	for _, w := range ft.took {
		kept := w.ids[:0]
		for _, id := range w.ids {
			if b := ft.bodies[id]; b != nil {
				kept = append(kept, id)
				w.events = append(w.events, b)
			}
		}
		w.ids = kept
	}
	return nil
}

// drop deletes what was taken from the buffers.
func (ft *fireTx) drop() error {
	var cuts []Cut
	for _, r := range ft.some {
		if w := ft.took[r.SubscriptionID]; w.taken > 0 {
			cuts = append(cuts, Cut{r.SubscriptionID, w.last})
		}
	}
	if len(ft.whole) == 0 && len(cuts) == 0 {
		return nil
	}
	if err := ft.d.Drop(ft.whole, cuts); err != nil {
		return fmt.Errorf("drop taken events: %w", err)
	}
	return nil
}

// write records the deliveries in the inbox, numbered in order, and
// expires the subscriptions whose last fire this is.
func (ft *fireTx) write() error {
	var list []Delivery
	var owner []int
	var expire []string
	ft.entries = make([][]subscriptions.InboxEntry, len(ft.reqs))
	for i, r := range ft.reqs {
		w := ft.took[r.SubscriptionID]
		if w == nil {
			continue
		}
		for _, d := range ft.deliveries(r, w) {
			list = append(list, d)
			owner = append(owner, i)
		}
		if r.Expire {
			expire = append(expire, r.SubscriptionID)
		}
	}
	if len(list) > 0 {
		principals := make([]string, len(list))
		for k, d := range list {
			principals[k] = d.Principal
		}
		seqs, err := ft.d.DrawSeqs(principals)
		if err != nil {
			return fmt.Errorf("draw sequence numbers: %w", err)
		}
		for k := range list {
			i := owner[k]
			list[k].Seq, list[k].Pending = seqs[k], ft.reqs[i].Pending
			ft.entries[i] = append(ft.entries[i], list[k].InboxEntry)
		}
		if err := ft.d.Insert(list, ft.now); err != nil {
			return fmt.Errorf("write inbox entries: %w", err)
		}
	}
	if len(expire) > 0 {
		if err := ft.d.Expire(expire, ft.now); err != nil {
			return fmt.Errorf("expire subscriptions: %w", err)
		}
	}
	return nil
}

// results are the results of the requests, in order.
func (ft *fireTx) results() []subscriptions.FireResult {
	out := make([]subscriptions.FireResult, len(ft.reqs))
	for i, r := range ft.reqs {
		out[i].SubscriptionID = r.SubscriptionID
		w := ft.took[r.SubscriptionID]
		if w == nil {
			out[i].Skipped = true
			continue
		}
		out[i].Remaining = w.total - w.taken
		if ft.entries != nil {
			out[i].Entries = ft.entries[i]
		}
	}
	return out
}

// expireFlush is the size of the batches in which an expiring subscription's
// buffer is delivered.
const expireFlush = 1000

// Expire expires, in tx, the subscriptions whose time is up at now, and
// returns the requests that deliver what waits in their buffers with their
// expiry notice, by subscription ID: Fire them, without claim, in tx.
func Expire(ctx context.Context, tx DB, now time.Time) ([]subscriptions.FireRequest, error) {
	reqs, err := scanAll(ctx, tx, func(r Row, q *subscriptions.FireRequest) error {
		*q = subscriptions.FireRequest{Max: expireFlush, Aggregate: true, Drain: true, Expire: true, Pending: true}
		return r.Scan(&q.SubscriptionID, &q.Principal)
	}, `UPDATE subscriptions SET status = 'expired', expired_at = $1, updated_at = $1, next_fire_at = NULL
		WHERE status IN ('active', 'paused') AND expires_at IS NOT NULL AND expires_at <= $1
		RETURNING id, principal`, now)
	slices.SortFunc(reqs, func(a, b subscriptions.FireRequest) int { return cmp.Compare(a.SubscriptionID, b.SubscriptionID) })
	return reqs, err
}

// Entries are the inbox entries of results, in order.
func Entries(results []subscriptions.FireResult) []subscriptions.InboxEntry {
	var out []subscriptions.InboxEntry
	for _, r := range results {
		out = append(out, r.Entries...)
	}
	return out
}

// Number gives each entry of the principals listed its number, in list
// order, from the last number drawn for each principal.
func Number(principals []string, last map[string]int64) ([]int64, error) {
	count := make(map[string]int64, len(last))
	for _, p := range principals {
		count[p]++
	}
	seqs := make([]int64, len(principals))
	for i, p := range principals {
		n, ok := last[p]
		if !ok {
			return nil, fmt.Errorf("no inbox numbers drawn for principal %q", p)
		}
		seqs[i] = n - count[p] + 1
		count[p]--
	}
	return seqs, nil
}
