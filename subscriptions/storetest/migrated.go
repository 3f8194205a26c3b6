package storetest

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// LegacyEvents are events as a store kept them before a sourceEventId was
// deduplicated among its source's events only: ID, type, sourceEventId. A
// migration test writes them with the schema before, then opens the store
// and calls CheckLegacyDedup.
var LegacyEvents = [][3]string{
	{eventID(901), "alert.HighCPU.firing", "fp1:firing:2025-01-15T10:00:00Z"},
	{eventID(902), "deploy.failed", "d-1"},
	{eventID(903), "conversation.user_message", "p1:m1"},
	{eventID(904), "github.push", "delivery-1"},
	{eventID(905), "slack.message", "Ev1"},
	{eventID(906), "mcp.upstream.log", "upstream:1"},
}

// CheckLegacyDedup checks that each of LegacyEvents, once migrated, is a
// duplicate when the source that posts its type sends it again (an
// adapter for its own types, POST /v1/events for the rest, the server for
// conversation events), and is not when another source does.
func CheckLegacyDedup(t *testing.T, s subscriptions.Store) {
	t.Helper()
	tests := []struct {
		legacy int
		source string
		dup    bool
	}{
		{0, "alertmanager", true},
		{0, "ingest", false},
		{1, "ingest", true},
		{1, "github", false},
		{2, "", true},
		{2, "ingest", false},
		{3, "github", true},
		{3, "ingest", false},
		{4, "slack", true},
		{5, "mcp", true},
	}
	for i, tt := range tests {
		l := LegacyEvents[tt.legacy]
		ev := &mcpe.Event{ID: eventID(910 + i), Type: l[1], Data: json.RawMessage(`{}`),
			Metadata: mcpe.Metadata{SourceEventID: l[2], Timestamp: t0, Priority: mcpe.PriorityNormal}}
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Publish(t.Context(), subscriptions.PublishBatch{Now: at(time.Hour), Deactivations: routed(t, s),
			Publications: []subscriptions.Publication{{Event: ev, Raw: raw, Source: tt.source}}})
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		want := subscriptions.PublishResult{EventID: ev.ID}
		if tt.dup {
			want = subscriptions.PublishResult{EventID: l[0], Duplicate: true}
		}
		diff(t, "Publish of "+l[1]+" "+l[2]+" from "+strconv.Quote(tt.source), []subscriptions.PublishResult{want}, res)
	}
}
