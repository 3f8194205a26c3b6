package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// TestTallyPrincipals checks that a notification counts as delivered only on
// the session of its subscription's principal: the same notification on
// another principal's session is foreign.
func TestTallyPrincipals(t *testing.T) {
	// Two subscriptions of group 3, owned by sessions 0 and 1.
	byGroup := map[int][]string{3: {"a", "b"}}
	owner := map[string]int{"a": 0, "b": 1}
	event := func(sub string, seq int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"subscriptionId":%q,"event":{"type":"svc3.created","data":{"seq":%d,"sent":1}}}`, sub, seq))
	}
	tests := []struct {
		name                    string
		session                 int
		sub                     string
		seq                     int
		foreign, dup, delivered int64
	}{
		{name: "own session", session: 0, sub: "a", seq: 3, delivered: 1},
		{name: "other principal's session", session: 1, sub: "a", seq: 3, foreign: 1},
		{name: "second principal", session: 1, sub: "b", seq: 103, delivered: 1},
		{name: "unknown subscription", session: 0, sub: "c", seq: 3, foreign: 1},
		{name: "wrong group", session: 0, sub: "a", seq: 4, foreign: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newTally()
			got.expect(byGroup, owner, 200)
			got.note(tt.session, mcpe.MethodEvent, event(tt.sub, tt.seq))
			if f, d, n := got.foreign.Load(), got.duplicates.Load(), int64(len(got.lat)); f != tt.foreign || d != tt.dup || n != tt.delivered {
				t.Errorf("foreign, duplicates, delivered = %d, %d, %d; want %d, %d, %d", f, d, n, tt.foreign, tt.dup, tt.delivered)
			}
		})
	}
	// Each expected one once: the second copy on the right session is a
	// duplicate.
	got := newTally()
	got.expect(byGroup, owner, 200)
	got.note(1, mcpe.MethodEvent, event("b", 3))
	got.note(1, mcpe.MethodEvent, event("b", 3))
	if got.expected != 4 || got.duplicates.Load() != 1 || len(got.lat) != 1 {
		t.Errorf("expected %d, duplicates %d, delivered %d; want 4, 1, 1", got.expected, got.duplicates.Load(), len(got.lat))
	}
}
