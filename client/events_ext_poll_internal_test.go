package client

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
)

// TestRunPollDoesNotSpin: a server that answers hasMore without moving the
// cursor, and asks for an absurd nextPollMs, does not make the poll loop
// spin: it waits (here on a fake clock that never moves, so it polls once).
func TestRunPollDoesNotSpin(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	var polls atomic.Int64
	mcp.AddReceivingCustomMethod(srv, MethodEventsPoll, func(_ context.Context, _ *mcp.ServerSession, _ *pollParams) (*pollResult, error) {
		polls.Add(1)
		return &pollResult{EventsPollResult: EventsPollResult{Cursor: "same", HasMore: true, NextPollMs: 1 << 62}}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	c, err := New(&Options{Clock: clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Connect(ctx, ct); err != nil {
		t.Fatal(err)
	}
	cursor := "same"
	runCtx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	c.RunPoll(runCtx, PollLoop{Request: EventsPollRequest{Name: "x", Cursor: &cursor}, OnEvent: func(context.Context, Occurrence) error { return nil }})
	if n := polls.Load(); n != 1 {
		t.Fatalf("the loop polled %d times in 300 ms on a clock that does not move; want 1", n)
	}
}
