package realtime

import (
	"fmt"
	"testing"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// TestWindowsBoundedTogether checks that the windows of many principals
// stay within 16 WindowBytes together: each keeps its share, so
// that thousands of sessions (each its own principal without tokens) do
// not each keep a full window of what one event sent them all.
func TestWindowsBoundedTogether(t *testing.T) {
	const windowBytes, principals = 4000, 64
	r := newRegistry(t, &Options{WindowBytes: windowBytes})
	for i := range principals {
		// Not live: nothing is written, so the windows only grow.
		r.Attach(fmt.Sprintf("p%d", i), &liveSink{chanSink: newChanSink()})
	}
	for n := range 100 {
		var es []subscriptions.InboxEntry
		for i := range principals {
			e, _ := entry(fmt.Sprintf("p%d", i), n)
			es = append(es, e)
		}
		r.Deliver(es)
	}
	r.mu.Lock()
	total, kept := 0, 0
	for _, o := range r.owners {
		total += o.windowBytes
		kept += len(o.window)
	}
	r.mu.Unlock()
	if total > 16*windowBytes || kept < principals {
		t.Errorf("the windows of %d principals keep %d bytes in %d deliveries; want at most %d bytes, and each principal's newest delivery",
			principals, total, kept, 16*windowBytes)
	}
}
