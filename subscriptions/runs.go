package subscriptions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
)

// This file is how the principals of sessions that ended with their
// process are deleted while other servers keep the store open. Each run (a
// Service from Start to Stop) names its ephemeral principals after itself
// and marks itself in the store (Runs); a run that stopped marking for
// DefaultMarkLapse is taken as ended, and the first live Service to see it
// deletes what its principals own.

// DefaultMarkInterval is how often a run is marked, and lapsed runs looked
// for.
const DefaultMarkInterval = 30 * time.Second

// DefaultMarkLapse is how long a run may go unmarked before it is taken
// as ended.
const DefaultMarkLapse = 3 * time.Minute

// lapsedBatch bounds the lapsed runs reclaimed at each mark.
const lapsedBatch = 100

// endRunTimeout bounds the deletion of a run's principals at Stop.
const endRunTimeout = 10 * time.Second

// newRun returns a new run name: 16 hex digits, random.
func newRun() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// RunPrefix returns the prefix of this run's ephemeral principals,
// EphemeralPrefix, the run and a colon, or "" without EphemeralPrefix.
// What they own is deleted at Stop, or by another server once the run's
// mark lapsed.
func (s *Service) RunPrefix() string {
	if s.opts.EphemeralPrefix == "" {
		return ""
	}
	return s.runPrefix(s.run)
}

func (s *Service) runPrefix(run string) string {
	return s.opts.EphemeralPrefix + run + ":"
}

// markRun marks this run in the store, reclaims the runs that lapsed, and
// schedules the next mark.
func (s *Service) markRun() {
	ctx := s.bg()
	now := s.clock.Now()
	known, err := s.runs.MarkRun(ctx, s.run, now)
	switch {
	case err != nil:
		s.log.Error("mark this server's run in the store", "error", err, "lapse", s.opts.markLapse,
			"effect", "once its marks fail for the lapse, other servers take it as ended and delete what its sessions without a token own")
	case !known && s.marked:
		s.log.Error("another server took this one as ended; ending its sessions without a token", "lapse", s.opts.markLapse,
			"cause", "no mark of its run reached the store for the lapse: the store was unreachable, or this process stopped", "effect", "what those sessions owned was deleted; their clients start new ones")
		if s.opts.RunLost != nil {
			s.opts.RunLost()
		}
	}
	if err == nil {
		s.marked = true
	}
	s.reclaimLapsed(ctx, now.Add(-s.opts.markLapse))
	t := s.after(s.opts.markInterval, s.markRun)
	s.life.Lock()
	s.markTimer = t
	s.life.Unlock()
}

// reclaimLapsed deletes what the principals of runs marked last before
// before own, and takes their subscriptions out of the index.
func (s *Service) reclaimLapsed(ctx context.Context, before time.Time) {
	runs, err := s.runs.LapsedRuns(ctx, before, lapsedBatch)
	if err != nil {
		s.log.Error("look for servers that ended without deleting what their sessions own", "error", err)
		return
	}
	for _, run := range runs {
		if run == s.run {
			continue
		}
		s.manage.Lock()
		gone, n, err := s.runs.ReclaimRun(ctx, run, before, s.runPrefix(run))
		if err == nil && gone {
			s.dropPrefixLocked(ctx, s.runPrefix(run))
		}
		s.manage.Unlock()
		switch {
		case err != nil:
			s.log.Error("delete what the sessions of a server that ended own", "run", run, "error", err)
		case gone:
			s.log.Info("deleted what the sessions without a token of an ended server owned",
				"run", run, "subscriptions", n, "reason", "its marks lapsed and it had not deleted it")
		}
	}
}

// dropPrefixLocked takes the subscriptions of principals starting with
// prefix out of the index, after the store deleted them. The caller holds
// s.manage.
func (s *Service) dropPrefixLocked(ctx context.Context, prefix string) {
	for _, id := range s.index.IDs() {
		if e := s.index.Get(id); e != nil && strings.HasPrefix(e.Principal, prefix) {
			s.removeEntry(id)
		}
	}
	s.routedDeactivations(ctx)
}

// endRun deletes what this run's ephemeral principals still own, and its
// mark: its sessions have ended. It runs at Stop, so the index is left as
// it is.
func (s *Service) endRun() {
	prefix := s.RunPrefix()
	if prefix == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), endRunTimeout)
	defer cancel()
	s.manage.Lock()
	defer s.manage.Unlock()
	var n int
	var err error
	if s.runs != nil {
		_, n, err = s.runs.ReclaimRun(ctx, s.run, time.Time{}, prefix)
	} else {
		n, err = s.store.DeletePrincipalsWithPrefix(ctx, prefix)
	}
	if err != nil {
		s.log.Error("delete what this server's sessions without a token own", "error", err)
		return
	}
	if n > 0 {
		s.log.Info("deleted what this server's sessions without a token still owned", "subscriptions", n)
	}
}
