package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStreamResumeWithinAnEntry replays what a server sends when a stream
// breaks in the middle of an inbox entry that carries several events (a
// digest): they share one cursor, so the stream resumes before that entry
// and the events of it already handled are not handed over again.
func TestStreamResumeWithinAnEntry(t *testing.T) {
	var handled []string
	type save struct {
		Cursor    string
		Truncated bool
	}
	var saved []save
	r := &streamRun{
		c: &Client{log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		loop: StreamLoop{
			OnEvent: func(_ context.Context, o Occurrence) error {
				handled = append(handled, o.EventID)
				return nil
			},
			OnCursor: func(_ context.Context, cursor string, truncated bool) error {
				saved = append(saved, save{cursor, truncated})
				return nil
			},
		},
	}
	meta := `"_meta":{"io.modelcontextprotocol/subscriptionId":1}`
	active := func(cursor string, truncated bool) note {
		return note{NotifyEventsActive, json.RawMessage(fmt.Sprintf(`{%s,"cursor":%q,"truncated":%v}`, meta, cursor, truncated))}
	}
	event := func(id, cursor string) note {
		return note{NotifyEventsEvent, json.RawMessage(fmt.Sprintf(`{%s,"eventId":%q,"name":"n","timestamp":"t","data":{},"cursor":%q}`, meta, id, cursor))}
	}
	beat := func(cursor string) note {
		return note{NotifyEventsHeartbeat, json.RawMessage(fmt.Sprintf(`{%s,"cursor":%q}`, meta, cursor))}
	}
	steps := []struct {
		notes      []note
		wantResume string
	}{
		// The first stream: one event at c1, then two of the three events
		// of the entry at c2; then it breaks.
		{[]note{active("c0", false), event("e1", "c1"), event("e2", "c2"), event("e3", "c2")}, "c1"},
		// The resumed stream starts at c1 and sends the entry at c2 whole.
		{[]note{active("c1", false), event("e2", "c2"), event("e3", "c2"), event("e4", "c2"), beat("c2")}, "c2"},
		// Retention passed the cursor: truncated.
		{[]note{active("c9", true), event("e9", "c10")}, "c9"},
	}
	for i, step := range steps {
		for _, n := range step.notes {
			if err := r.handle(context.Background(), n); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		if r.resume != step.wantResume {
			t.Errorf("step %d: resume cursor = %q, want %q", i, r.resume, step.wantResume)
		}
	}
	if diff := cmp.Diff([]string{"e1", "e2", "e3", "e4", "e9"}, handled); diff != "" {
		t.Errorf("handled mismatch (-want +got):\n%s", diff)
	}
	wantSaved := []save{{"c0", false}, {"c1", false}, {"c2", false}, {"c9", true}}
	if diff := cmp.Diff(wantSaved, saved); diff != "" {
		t.Errorf("OnCursor mismatch (-want +got):\n%s", diff)
	}
	// A terminated stream ends with a StreamTerminatedError.
	err := r.handle(context.Background(), note{NotifyEventsTerminated, json.RawMessage(`{"error":{"code":-32023,"message":"NotFound"}}`)})
	var te *StreamTerminatedError
	if !errors.As(err, &te) || te.Err == nil || te.Err.Code != -32023 {
		t.Errorf("terminated: error %v, want a *StreamTerminatedError with code -32023", err)
	}
}
