package delivery

import (
	"context"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// StartAll makes and starts a Scheduler for each buffered channel among
// channels (realtime, which fires nothing, is passed over), in the order
// given. On error, those already started are stopped.
func StartAll(ctx context.Context, f Firer, channels []mcpe.Channel, opts *SchedulerOptions) (Schedulers, error) {
	var all Schedulers
	for _, c := range channels {
		if c == mcpe.ChannelRealtime {
			continue
		}
		s, err := NewScheduler(c, f, opts)
		if err == nil {
			err = s.Start(ctx)
		}
		if err != nil {
			all.Stop()
			return nil, err
		}
		all = append(all, s)
	}
	return all, nil
}
