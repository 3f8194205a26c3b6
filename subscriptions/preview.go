package subscriptions

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// previewScan bounds how many of the newest inbox entries a dry run reads
// (as many as the default retention keeps), and previewEvents how many of
// their events it decodes and matches (the newest entry is looked at
// whole): an entry that would pass it is left out, and Since moved up past
// it.
const previewScan = 1000

var previewEvents = 10_000

// Preview answers events_subscribe with dryRun and creates nothing: what
// req's filter would have matched among the events of principal's inbox (the newest
// previewScan entries) delivered in the last mcpe.PreviewWindow, each event
// counted once. It reads the inbox only, not every accepted event: the
// events table does not record whom a PublishFor event was for, so
// another principal's private events could not be told apart. The events
// it returns are shaped as req's delivery says (fields, maxEventBytes).
func (s *Service) Preview(ctx context.Context, principal string, req mcpe.SubscribeRequest) (mcpe.DryRunResult, error) {
	res := mcpe.DryRunResult{Types: map[string]int{}, Events: []json.RawMessage{}, Since: s.clock.Now().UTC().Add(-mcpe.PreviewWindow)}
	shape := cmp.Or(req.Delivery, new(mcpe.DefaultDelivery()))
	m, err := CompileFilter(req.Filter)
	if err == nil {
		err = shape.Validate(s.channels)
	}
	if err != nil {
		return res, err
	}
	entries, err := s.store.LatestInbox(ctx, principal, previewScan)
	if err != nil {
		return res, err
	}
	counted, examined := map[string]bool{}, 0
	for i := len(entries) - 1; i >= 0 && !entries[i].CreatedAt.Before(res.Since); i-- {
		raws := entries[i].Events
		if entries[i].Kind == mcpe.InboxEvent {
			raws = []json.RawMessage{entries[i].Event}
		}
		if examined > 0 && examined+len(raws) > previewEvents {
			res.Since = entries[i].CreatedAt.Add(time.Nanosecond)
			break
		}
		examined += len(raws)
		for j := len(raws) - 1; j >= 0; j-- {
			var ev mcpe.Event
			if json.Unmarshal(raws[j], &ev) != nil || counted[ev.ID] || !m.Match(&ev) {
				continue
			}
			counted[ev.ID] = true
			res.Matched++
			res.Types[ev.Type]++
			if len(res.Events) < mcpe.PreviewSample {
				res.Events = append(res.Events, shape.Shape(raws[j]))
			}
		}
	}
	return res, nil
}
