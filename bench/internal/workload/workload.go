// Package workload is the routing workload the benchmarks share
// (shared/bench/routing-workload.md): subscription i belongs to group
// i mod 100, blocks of 100 alternate between the pattern svc<g>.* and the
// exact type svc<g>.created, and event e has type svc<e mod 100>.created,
// so each event matches about S/100 of S subscriptions.
package workload

import (
	"fmt"
	"time"
)

// Groups is the number of groups subscriptions and events fall in.
const Groups = 100

// Group is the group of subscription i, and of event i.
func Group(i int) int { return i % Groups }

// Pattern is the event type pattern of subscription i.
func Pattern(i int) string {
	if (i/Groups)%2 == 1 {
		return fmt.Sprintf("svc%d.created", Group(i))
	}
	return fmt.Sprintf("svc%d.*", Group(i))
}

// AppendEvent appends the body of event e to dst: type
// svc<e mod 100>.created, with e and the time it is made (Unix
// nanoseconds) in its data.
func AppendEvent(dst []byte, e int) []byte {
	return fmt.Appendf(dst, `{"type":"svc%d.created","data":{"seq":%d,"sent":%d}}`, e%Groups, e, time.Now().UnixNano())
}
