package adapters

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
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
		{name: "no publisher", opts: ReceiverOptions{MaxBodyBytes: -1}, wantErr: "src: Options.Publisher is required"},
		{name: "negative body limit", opts: ReceiverOptions{Publisher: pub, MaxBodyBytes: -1}, wantErr: "src: maxBodyBytes: is -1; give a positive number of bytes, or leave it out for 1048576"},
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
	if got.Publisher != pub || got.MaxBodyBytes != DefaultMaxBodyBytes || got.Clock == nil || got.Logger == nil {
		t.Errorf("defaults: %+v", got)
	}
	if got.Logger.Enabled(context.Background(), slog.LevelError) {
		t.Error("the default logger writes")
	}

	fake := clock.NewFake(time.Date(2025, 6, 2, 13, 0, 0, 0, time.UTC))
	logger := slog.New(slog.DiscardHandler)
	given := ReceiverOptions{Publisher: pub, MaxBodyBytes: 512, Clock: fake, Logger: logger}
	if got, err := given.Check("src"); err != nil || got != given {
		t.Errorf("Check(%+v) = %+v, %v; want it unchanged", given, got, err)
	}
}
