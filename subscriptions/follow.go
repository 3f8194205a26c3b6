package subscriptions

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// This file is how a Service shares its store with other processes (a
// second server on the same SQLite file, or replicas on one PostgreSQL
// database): when the store implements Shared, the service follows what the
// others write. Inbox entries of the principals with live sessions here are
// handed to the Deliverer in sequence order, merged with this process's
// own; subscription changes are applied to the routing index. It looks
// every followInterval, and before handing over its own entries when others
// wrote some since.

// followInterval is how often a Service on a shared store looks for what
// other processes wrote: the bound on how late a subscription changed there
// routes here, and an event accepted there reaches a session here.
const followInterval = 100 * time.Millisecond

// wakeSpacing is the least time between two looks that a Notifier's wakes
// start: what another process wrote arrives that much later at worst, and
// a busy store costs the follower at most 1/wakeSpacing looks a second.
const wakeSpacing = 2 * time.Millisecond

// followBatch bounds the inbox entries read from the store at a time.
const followBatch = 500

// Sessions is implemented by a Deliverer that knows which principals have
// live sessions in this process (delivery/realtime): on a shared store,
// what other processes deliver to those principals is read and handed to
// it.
type Sessions interface {
	Principals() []string
	// Arrived receives after a principal with no session here got one: a
	// store that wakes by principal (Watcher) is told at once.
	Arrived() <-chan struct{}
	// Owners tells, for each of principals, who holds its sessions here.
	Owners(principals []string) []Owner
}

// Owner is what a Deliverer holds for one principal's live sessions: ID is
// 0 when it has none, and another when the principal left and came back;
// Start is the number of the newest inbox entry committed before its
// first session came (it is sent what follows), or -1 when unknown or
// not needed (the store numbers one sequence for all).
type Owner struct {
	ID    uint64
	Start int64
}

// Watcher is implemented by a Notifier that can leave out what others
// write to the inboxes of principals with no session here: after Watch,
// Written receives for the inbox entries of principals only (and for every
// subscription change).
type Watcher interface {
	Watch(principals []string)
}

// follower is the state of following a shared store.
type follower struct {
	shared Shared
	// sessions is the Deliverer, when it tells whose sessions are here;
	// nil follows subscription changes only.
	sessions Sessions
	// perPrincipal is the store's InboxPerPrincipal. inbox is the newest
	// inbox entry this process wrote or read when the store numbers one
	// sequence; marks, when it numbers per principal, that of each
	// principal here, with the owner it was counted for (both guarded by
	// Service.commit). changes is the newest subscription change the
	// index reflects (guarded by Service.manage).
	perPrincipal bool
	inbox        int64
	marks        map[string]mark
	changes      int64
	// othersAt is when (Unix nanoseconds, wall clock) the follower last
	// found something another process wrote: a Notifier's wakes are
	// followed only for a while after, as every commit of this process
	// wakes it too.
	othersAt atomic.Int64
	// windowsAt is when the follower last looked for throttle windows.
	windowsAt time.Time
	stop      chan struct{}
	done      chan struct{}
	// interval is followInterval unless a test sets another.
	interval time.Duration
}

// othersActive is how long after another process was last seen writing a
// Notifier's wakes are followed.
const othersActive = time.Minute

// sawOthers records that another process wrote.
func (f *follower) sawOthers() { f.othersAt.Store(time.Now().UnixNano()) }

// othersRecently reports whether another process wrote lately.
func (f *follower) othersRecently() bool {
	return time.Since(time.Unix(0, f.othersAt.Load())) < othersActive
}

// newFollower returns the follower of s's store, or nil when the store is
// not shared.
func newFollower(store Store, deliverer Deliverer) *follower {
	shared, ok := store.(Shared)
	if !ok {
		return nil
	}
	f := &follower{shared: shared, interval: followInterval, perPrincipal: shared.InboxPerPrincipal()}
	f.sessions, _ = deliverer.(Sessions)
	return f
}

// startFollowing records where the store's inbox and change log are now:
// what precedes is not news (Start loads every subscription after it). It
// is called before the subscriptions are loaded.
func (s *Service) startFollowing(ctx context.Context) error {
	if s.follow == nil {
		return nil
	}
	inbox, changes, err := s.follow.shared.Heads(ctx, nil)
	if err != nil {
		return err
	}
	s.follow.inbox, s.follow.changes = inbox[""], changes
	return nil
}

// runFollowing looks for what other processes wrote every interval, on the
// wall clock (a poll, not a domain time: a fake clock moved by a day must
// not run it a million times), and, once another process has been seen
// writing, whenever a store that is a Notifier says they wrote, until Stop.
func (s *Service) runFollowing() {
	f := s.follow
	if f == nil {
		return
	}
	f.stop, f.done = make(chan struct{}), make(chan struct{})
	notifier, _ := f.shared.(Notifier)
	go func() {
		defer close(f.done)
		t := time.NewTicker(f.interval)
		defer t.Stop()
		// A Notifier that tells this process's own commits too is listened
		// to only once another process has been seen writing: a server
		// alone takes no wake-up per commit. One that leaves them out is
		// listened to at once: the first subscription another process
		// makes routes here without waiting for the interval.
		var written, arrived <-chan struct{}
		if f.sessions != nil {
			arrived = f.sessions.Arrived()
		}
		own := false
		for {
			if written == nil && notifier != nil && (!notifier.OwnWritesTold() || f.othersRecently()) {
				written, own = notifier.Written(), notifier.OwnWritesTold()
			}
			woken := false
			select {
			case <-f.stop:
				return
			case <-t.C:
			case <-arrived:
			case <-written:
				if own && !f.othersRecently() {
					continue // most likely this process's own commit
				}
				woken = true
			}
			s.followOnce(s.bg(), !woken)
			if woken {
				// This process's own commits wake it too: under a stream
				// of writes, look at most once per wakeSpacing.
				select {
				case <-f.stop:
					return
				case <-time.After(wakeSpacing):
				}
			}
		}
	}()
}

// stopFollowing ends runFollowing and waits for it.
func (s *Service) stopFollowing() {
	if f := s.follow; f != nil && f.stop != nil {
		close(f.stop)
		<-f.done
		f.stop = nil
	}
}

// followOnce applies the subscription changes and hands over the inbox
// entries that other processes wrote since it last looked. With watch (at
// each interval, and when a principal arrives, not at each wake: one that
// left costs wakes until then) it first tells a Watcher store whose
// sessions are here, before Heads: what commits after wakes by them.
func (s *Service) followOnce(ctx context.Context, watch bool) {
	var here []string
	if s.follow.sessions != nil {
		here = s.follow.sessions.Principals()
	}
	if w, ok := s.follow.shared.(Watcher); ok && watch {
		w.Watch(here)
	}
	inbox, changes, err := s.follow.shared.Heads(ctx, here)
	if err != nil {
		s.log.Warn("read what other processes sharing the store wrote", "error", err)
		return
	}
	s.manage.Lock()
	if changes > s.follow.changes {
		s.followChangesLocked(ctx)
	}
	s.manage.Unlock()
	s.commit.Lock()
	wrote := s.followInboxLocked(ctx, here, inbox)
	s.commit.Unlock()
	// Another process may have opened a throttle window, which this one
	// ends should that one stop: found by its inbox head in one sequence,
	// looked for every windowsLook when each principal is numbered apart.
	if wrote || s.follow.perPrincipal && watch && time.Since(s.follow.windowsAt) >= windowsLook {
		s.follow.windowsAt = time.Now()
		s.watchers.changed(Windows)
	}
}

// windowsLook is how often a follower of a store that numbers each
// principal's inbox apart looks for throttle windows other processes
// opened (a window lasts a second at least).
const windowsLook = time.Second

// followChangesLocked brings the index up to date with every subscription
// change in the store, then records the store's count of deactivations,
// read first, as reflected (see routedDeactivations). The caller holds
// s.manage.
func (s *Service) followChangesLocked(ctx context.Context) {
	d, err := s.store.Deactivations(ctx)
	if err != nil {
		s.log.Warn("read the count of stopped subscriptions", "error", err)
		d = 0
	}
	_, head, err := s.follow.shared.Heads(ctx, nil)
	if err != nil {
		s.log.Warn("read the subscription changes of other processes", "error", err)
		return
	}
	if head > s.follow.changes {
		changes, complete, err := s.follow.shared.ChangedSubscriptions(ctx, s.follow.changes, head)
		if err != nil {
			s.log.Warn("read the subscription changes of other processes", "error", err)
			return
		}
		if complete {
			if s.applyChanges(changes) > 0 {
				s.follow.sawOthers()
			}
		} else if err := s.reloadLocked(ctx); err != nil {
			s.log.Warn("reload subscriptions after missing changes", "error", err)
			return
		}
		s.follow.changes = head
		s.watchers.changed(mcpe.ChannelCron, mcpe.ChannelScheduled)
		s.armExpiry()
	}
	if d > 0 {
		s.routed.Store(d)
	}
}

// applyChanges puts the changed subscriptions that are active in the index
// and takes the others out, and returns how many changed the index.
func (s *Service) applyChanges(changes []Change) int {
	n := 0
	for _, c := range changes {
		sub := c.Subscription
		if sub == nil || sub.Status != mcpe.StatusActive {
			if s.index.Get(c.SubscriptionID) != nil {
				s.removeEntry(c.SubscriptionID)
				n++
			}
			continue
		}
		if e := s.index.Get(sub.ID); e != nil && !sub.UpdatedAt.IsZero() && e.updated.Equal(sub.UpdatedAt) &&
			sameJSON(e.filter, sub.Filter) && sameJSON(e.Delivery, sub.Delivery) {
			continue // this version is in the index: this process made it
		}
		n++
		e, err := NewEntry(sub)
		if err != nil {
			s.log.Error("stored subscription has a filter this version rejects",
				"subscription_id", sub.ID, "error", err, "effect", "it receives no new events until updated")
			s.removeEntry(sub.ID)
			continue
		}
		s.putEntry(e)
	}
	return n
}

// reloadLocked makes the index hold exactly the active subscriptions of
// the store. The caller holds s.manage.
func (s *Service) reloadLocked(ctx context.Context) error {
	subs, err := s.store.ListSubscriptions(ctx, ListQuery{Status: mcpe.StatusActive})
	if err != nil {
		return err
	}
	keep := make(map[string]bool, len(subs))
	changes := make([]Change, len(subs))
	for i, sub := range subs {
		keep[sub.ID] = true
		changes[i] = Change{SubscriptionID: sub.ID, Subscription: sub}
	}
	for _, id := range s.index.IDs() {
		if !keep[id] {
			s.removeEntry(id)
		}
	}
	s.applyChanges(changes)
	s.log.Info("subscriptions reloaded", "active", len(subs), "reason", "changes made by other processes were removed before this one read them")
	return nil
}

// followInboxLocked hands the Deliverer the entries of the principals
// here (with live sessions; read anew on a store numbering one sequence)
// written after the newest ones this process knows, up
// to the heads read, and reports whether there were any. Entries another
// process kept for an owner it thought away are delivered here when the
// owner is here, and no longer kept. The caller holds s.commit.
func (s *Service) followInboxLocked(ctx context.Context, here []string, heads map[string]int64) bool {
	f := s.follow
	var spans []InboxSpan
	if !f.perPrincipal {
		through := heads[""]
		if through <= f.inbox {
			return false
		}
		f.sawOthers() // entries this process did not write
		// Read after the heads: a principal that arrives later started
		// after them.
		here = nil
		if f.sessions != nil {
			here = f.sessions.Principals()
		}
		for _, p := range here {
			spans = append(spans, InboxSpan{Principal: p, After: f.inbox, Through: through})
		}
		if s.followSpans(ctx, spans) {
			f.inbox = through
		}
		return true
	}
	if f.sessions == nil {
		return false
	}
	owners := f.sessions.Owners(here)
	marks := make(map[string]mark, len(here))
	for i, p := range here {
		m, ok := f.markOf(p, owners[i], heads[p])
		if !ok {
			continue
		}
		if h := heads[p]; h > m.at {
			spans = append(spans, InboxSpan{Principal: p, After: m.at, Through: h})
			m.at = h
		}
		marks[p] = m
	}
	if len(spans) == 0 {
		f.marks = marks
		return false
	}
	f.sawOthers()
	if s.followSpans(ctx, spans) { // else read again at the next look
		f.marks = marks
	}
	return true
}

// mark is how far the entries of one principal were handed to its owner
// here.
type mark struct {
	owner uint64
	at    int64
}

// markOf returns the mark of principal, held by o: where o started when
// the mark was counted for another owner (or none), or unknown should o
// not know. ok is false when the principal has no owner here.
func (f *follower) markOf(principal string, o Owner, unknown int64) (m mark, ok bool) {
	if o.ID == 0 {
		return mark{}, false
	}
	if m, ok := f.marks[principal]; ok && m.owner == o.ID {
		return m, true
	}
	if o.Start < 0 {
		return mark{owner: o.ID, at: unknown}, true
	}
	return mark{owner: o.ID, at: o.Start}, true
}

// followSpans reads the entries of spans and hands them to the Deliverer,
// and reports whether it read them all.
func (s *Service) followSpans(ctx context.Context, spans []InboxSpan) bool {
	f := s.follow
	for len(spans) > 0 {
		entries, more, err := f.shared.InboxRange(ctx, spans, followBatch)
		if err != nil {
			s.log.Warn("read what other processes delivered", "error", err)
			return false
		}
		s.deliverer.Deliver(entries)
		if !more || len(entries) == 0 {
			break
		}
		read := make(map[string]int64, len(spans))
		for _, e := range entries {
			read[e.Principal] = max(read[e.Principal], e.Seq)
		}
		for i := range spans {
			spans[i].After = max(spans[i].After, read[spans[i].Principal])
		}
	}
	return true
}

// handOver hands the Deliverer deliver, part of written: entries this
// process just wrote. On a shared store, entries other processes wrote
// before them go first. The caller holds s.commit.
func (s *Service) handOver(ctx context.Context, written, deliver []InboxEntry) {
	f := s.follow
	if f == nil || len(written) == 0 {
		s.deliverer.Deliver(deliver)
		return
	}
	if !f.perPrincipal {
		lo, hi := written[0].Seq, written[0].Seq
		for _, e := range written[1:] {
			lo, hi = min(lo, e.Seq), max(hi, e.Seq)
		}
		if lo > f.inbox+1 {
			s.followInboxLocked(ctx, nil, map[string]int64{"": lo - 1})
		}
		s.deliverer.Deliver(deliver)
		f.inbox = max(f.inbox, hi)
		return
	}
	if f.sessions == nil {
		s.deliverer.Deliver(deliver)
		return
	}
	// Each principal's entries are numbered one after the other: a gap
	// before the first written here is what others wrote meanwhile.
	var principals []string
	span := make(map[string]InboxSpan)
	for _, e := range written {
		sp, ok := span[e.Principal]
		if !ok {
			principals = append(principals, e.Principal)
			sp = InboxSpan{Principal: e.Principal, After: e.Seq, Through: e.Seq}
		}
		sp.After, sp.Through = min(sp.After, e.Seq), max(sp.Through, e.Seq)
		span[e.Principal] = sp
	}
	owners := f.sessions.Owners(principals)
	var gaps []InboxSpan
	if f.marks == nil {
		f.marks = make(map[string]mark)
	}
	for i, p := range principals {
		m, ok := f.markOf(p, owners[i], span[p].After-1)
		if !ok {
			delete(f.marks, p)
			continue
		}
		if lo := span[p].After; lo > m.at+1 {
			gaps = append(gaps, InboxSpan{Principal: p, After: m.at, Through: lo - 1})
		}
		m.at = max(m.at, span[p].Through)
		f.marks[p] = m
	}
	if len(gaps) > 0 {
		f.sawOthers()
		s.followSpans(ctx, gaps)
	}
	s.deliverer.Deliver(deliver)
}
