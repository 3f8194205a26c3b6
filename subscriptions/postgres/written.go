package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// This file tells a follower (subscriptions.Notifier) at once when another
// process on the database commits inbox entries or subscription changes:
// triggers NOTIFY the channel mcpe_written (migration 0003), and one
// connection of each store LISTENs to it. Should that connection drop, it
// is made again with back-off; the follower polls meanwhile.

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
	// What was written before the LISTEN took effect is found by the
	// follower's next look.
	s.wake()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Payload != s.name {
			s.wake()
		}
	}
}

func (s *Store) wake() {
	select {
	case s.written <- struct{}{}:
	default:
	}
}
