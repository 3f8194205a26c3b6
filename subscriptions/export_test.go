package subscriptions

import (
	"context"
	"time"
)

// SetBeforeMatch makes the index of s run f after reading the candidates
// of a new type and before matching its patterns.
func SetBeforeMatch(s *Service, f func()) { s.index.beforeMatch = f }

// SetFollowInterval makes s, before Start, look for what other processes
// sharing its store wrote every d.
func SetFollowInterval(s *Service, d time.Duration) { s.follow.interval = d }

// FollowNow reads at once what other processes sharing s's store wrote.
func FollowNow(s *Service) { s.followOnce(context.Background(), true) }

// SetYield makes the publications' group commit call f where it would
// yield the processor.
func SetYield(s *Service, f func()) { s.batch.yield = f }

// Queued returns how many publications of s wait for a commit.
func Queued(s *Service) int {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	return len(s.batch.queue)
}

// SetPreviewEvents sets how many events a dry run looks at, until the
// returned function puts it back.
func SetPreviewEvents(n int) (restore func()) {
	was := previewEvents
	previewEvents = n
	return func() { previewEvents = was }
}

// SetMarks makes the Service made from o mark its run every interval, and
// take a run unmarked for lapse as ended; zero keeps the default.
func SetMarks(o *ServiceOptions, interval, lapse time.Duration) {
	o.markInterval, o.markLapse = interval, lapse
}
