package postgres

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// This file tells a follower (subscriptions.Notifier) at once when another
// process on the database commits subscription changes, or inbox entries
// of the principals it watches: triggers NOTIFY the channel mcpe_written
// for the first, and mcpe_inbox_<first byte of the md5 of the principal>
// for the others (migrations 0003 and 0008). One connection of each store
// LISTENs to mcpe_written and to the inbox channels of the principals it
// watches, and leaves out the others' notifications that the channel shares.
// Should that connection drop, it is made again with back-off; the
// follower polls meanwhile.

var _ subscriptions.Notifier = (*Store)(nil)

// The back-off between attempts to listen again.
const (
	listenFirstRetry = 100 * time.Millisecond
	listenMaxRetry   = 10 * time.Second
)

// processName returns a name for this store's connections
// (application_name), different from every other process's: notifications
// carry the writer's, so a store can leave out its own.
func processName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "mcpe-server/" + hex.EncodeToString(b)
}

// OwnWritesTold implements subscriptions.Notifier: a notification names
// its writer, and this store's own are left out.
func (s *Store) OwnWritesTold() bool { return false }

// Watch implements subscriptions.Watcher: an inbox notification names the
// md5 of its principal.
func (s *Store) Watch(principals []string) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	hashes, set := make(map[string]string, len(principals)), make(map[string]bool, len(principals))
	var buckets [256]bool
	for _, p := range principals {
		h, ok := s.hashes[p]
		if !ok {
			sum := md5.Sum([]byte(p))
			h = hex.EncodeToString(sum[:])
		}
		hashes[p], set[h] = h, true
		b, _ := strconv.ParseUint(h[:2], 16, 8)
		buckets[b] = true
	}
	s.hashes = hashes
	s.watched.Store(&set)
	if old := s.buckets.Load(); old == nil || *old != buckets {
		s.buckets.Store(&buckets)
		signal(s.rewatch)
	}
}

// Written implements subscriptions.Notifier.
func (s *Store) Written() <-chan struct{} {
	s.writtenOnce.Do(func() {
		s.written = make(chan struct{}, 1)
		ctx, cancel := context.WithCancel(context.Background())
		s.stopListen = cancel
		s.listening.Add(1)
		go s.listen(ctx)
	})
	return s.written
}

// listen holds a connection that listens to mcpe_written until ctx ends,
// and reports the others' notifications on s.written.
func (s *Store) listen(ctx context.Context) {
	defer s.listening.Done()
	wait := listenFirstRetry
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, func() { wait = listenFirstRetry })
		if ctx.Err() != nil {
			return
		}
		s.listenErr.Store(&err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, listenMaxRetry)
	}
}

// listenOnce listens on one connection until it fails or ctx ends; it calls
// listening once the LISTEN took effect.
func (s *Store) listenOnce(ctx context.Context, listening func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.connConfig)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN mcpe_written`); err != nil {
		return err
	}
	listening()
	var listened [256]bool
	for {
		if added, err := relisten(ctx, conn, &listened, s.buckets.Load()); err != nil {
			return err
		} else if added {
			// What was written before the LISTEN took effect is found by
			// the follower's next look.
			signal(s.written)
		}
		// Watch interrupts the wait when the channels to listen to change.
		wctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-s.rewatch:
				cancel()
			case <-wctx.Done():
			}
		}()
		n, err := conn.WaitForNotification(wctx)
		interrupted := wctx.Err() != nil
		cancel()
		if err != nil && interrupted && ctx.Err() == nil {
			continue
		} else if err != nil {
			return err
		}
		// "writer" for a subscription change, "writer md5" for inbox
		// entries: only those of the principals watched (all until Watch
		// is called) wake.
		writer, principal, entries := strings.Cut(n.Payload, " ")
		if set := s.watched.Load(); writer != s.name && (!entries || set == nil || (*set)[principal]) {
			signal(s.written)
		}
	}
}

// relisten makes conn listen to the inbox channels of the buckets in want
// (all when nil) and to no other, and reports whether it listens to one
// more.
func relisten(ctx context.Context, conn *pgx.Conn, listened, want *[256]bool) (added bool, err error) {
	var sql []string
	for i := range listened {
		if w := want == nil || want[i]; w != listened[i] {
			sql = append(sql, fmt.Sprintf("%sLISTEN mcpe_inbox_%02x", map[bool]string{true: "", false: "UN"}[w], i))
			listened[i], added = w, added || w
		}
	}
	if len(sql) > 0 {
		_, err = conn.Exec(ctx, strings.Join(sql, "; "))
	}
	return added, err
}

// signal sends on c unless a signal waits there already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
