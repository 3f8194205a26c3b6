package subscriptions_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

func TestPublishForReachesOnlyThePrincipal(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "mcpe.db"), clocktest.NewFake(svcStart), subscriptions.ServiceOptions{})
	alice := f.subscribe("alice", every("conversation.*"))
	f.subscribe("bob", every("conversation.*"))
	f.subscribe("bob", every("*"))
	res, err := f.svc.PublishFor(context.Background(), "alice", mcpe.Event{Type: "conversation.user_message", Data: json.RawMessage(`{"content": "hi"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alice " + alice.ID}, f.rec.delivered()); diff != "" {
		t.Errorf("deliveries mismatch (-want +got):\n%s", diff)
	}
	if res.EventID == "" || len(res.Delivered) != 1 {
		t.Errorf("result %+v; want the event stored and one delivery", res)
	}
	if _, err := f.svc.PublishFor(context.Background(), "", mcpe.Event{Type: "x", Data: json.RawMessage(`{}`)}); err == nil {
		t.Error("PublishFor without a principal succeeded")
	}
	// Invalid events are refused as Publish refuses them.
	if _, err := f.svc.PublishFor(context.Background(), "alice", mcpe.Event{Type: "bad..type", Data: json.RawMessage(`{}`)}); err == nil {
		t.Error("PublishFor accepted an invalid type")
	}
}
