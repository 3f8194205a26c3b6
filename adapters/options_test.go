package adapters

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

type nopPublisher struct{}

func (nopPublisher) Publish(context.Context, mcpe.Event) (subscriptions.PublishResult, error) {
	return subscriptions.PublishResult{}, nil
}

func TestReceiverOptionsCheck(t *testing.T) {
	pub := nopPublisher{}
	for _, tc := range []struct {
		name    string
		opts    ReceiverOptions
		wantErr string
	}{
		{name: "no publisher", opts: ReceiverOptions{}, wantErr: "src: Options.Publisher is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.opts.Check("src")
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("Check = %v, want %q", err, tc.wantErr)
			}
		})
	}

	got, err := ReceiverOptions{Publisher: pub}.Check("src")
	if err != nil {
		t.Fatal(err)
	}
	if got.Publisher != pub || got.Clock == nil || got.Logger == nil {
		t.Errorf("defaults: %+v", got)
	}
	if got.Logger.Enabled(context.Background(), slog.LevelError) {
		t.Error("the default logger writes")
	}

	fake := clocktest.NewFake(time.Date(2025, 6, 2, 13, 0, 0, 0, time.UTC))
	logger := slog.New(slog.DiscardHandler)
	given := ReceiverOptions{Publisher: pub, Clock: fake, Logger: logger}
	if got, err := given.Check("src"); err != nil || got != given {
		t.Errorf("Check(%+v) = %+v, %v; want it unchanged", given, got, err)
	}
}
