package subscriptions

import (
	"context"
	"slices"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Windows names the ends of throttle windows (mcpe.Throttle) for the
// Scheduler of package delivery: NextFire, FireDue and WatchSchedule work
// on them as on the fires of a buffered channel. The windows are in the
// store, so that they end, once, whichever server is running then.
const Windows mcpe.Channel = "throttle"

// endWindows ends at most FireChunk windows due at now and delivers what
// they folded.
func (s *Service) endWindows(ctx context.Context, now time.Time) (more bool, err error) {
	s.commit.Lock()
	entries, more, err := s.store.EndWindows(ctx, now, FireChunk)
	if err == nil {
		s.handOver(ctx, entries, entries)
	}
	s.commit.Unlock()
	if len(entries) > 0 {
		s.jobsWritten()
	}
	return more, err
}

// tell calls the functions watching channel c.
func (w *scheduleWatchers) tell(c mcpe.Channel) {
	w.mu.Lock()
	fs := slices.Clone(w.fs[c])
	w.mu.Unlock()
	for _, f := range fs {
		f()
	}
}
