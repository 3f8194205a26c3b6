package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/client/clienttest"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/examples/internal/exampletest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

const token = "digest-token"

// start is 08:00 in Paris, a Monday.
var start = time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)

// TestDigest runs the example against an in-process server whose clock the
// test moves: the events wait until 09:00 in Paris, then come as digests of
// at most -max events.
func TestDigest(t *testing.T) {
	ctx := context.Background()
	fake := clocktest.NewFake(start)
	s := exampletest.StartServer(t, &clienttest.Options{Clock: fake, Tokens: map[string]string{token: "alice"}})

	p := exampletest.Start(t, run, "-url", s.MCPEndpoint, "-token", token, "-zone", "Europe/Paris", "-max", "2")
	if got, want := p.Stderr.WaitFor(t, "subscribed"), "the first digest comes at 2026-03-02T09:00:00+01:00"; !strings.Contains(got, want) {
		t.Errorf("subscribed line %q does not say %q", got, want)
	}
	for i, title := range []string{"Login fails", "Typo in README", "Crash on start"} {
		in := mcpe.EventInput{
			Type:     "github.issues.opened",
			Data:     json.RawMessage(fmt.Sprintf(`{"issue": {"number": %d, "title": %q}}`, i+1, title)),
			Metadata: &mcpe.MetadataInput{Timestamp: start.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)},
		}
		if _, err := s.Post(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Post(ctx, mcpe.EventInput{Type: "github.push"}); err != nil {
		t.Fatal(err)
	}
	fake.Advance(59 * time.Minute)
	if rest := p.Stdout.Rest(); len(rest) != 0 {
		t.Fatalf("printed before 09:00: %q", rest)
	}
	fake.Advance(time.Minute) // 09:00 in Paris
	var got []string
	for range 3 {
		got = append(got, p.Stdout.Next(t))
	}
	fake.Advance(24 * time.Hour) // 09:00 the next day
	for range 2 {
		got = append(got, p.Stdout.Next(t))
	}
	want := []string{
		"digest: 2 events, 1 more in the next one",
		`  2026-03-02T07:00:00Z normal github.issues.opened #1 "Login fails"`,
		`  2026-03-02T07:01:00Z normal github.issues.opened #2 "Typo in README"`,
		"digest: 1 event",
		`  2026-03-02T07:02:00Z normal github.issues.opened #3 "Crash on start"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output mismatch (-want +got):\n%s", diff)
	}
	if err := p.Stop(t); err != nil {
		t.Errorf("run = %v", err)
	}
	if subs, err := s.Service.List(ctx, "alice", ""); err != nil || len(subs) != 0 {
		t.Errorf("subscriptions left behind: %v, %v", subs, err)
	}
}

func TestDigestErrors(t *testing.T) {
	s := exampletest.StartServer(t, &clienttest.Options{Tokens: map[string]string{token: "alice"}})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-zone", "Mars/Olympus"}, `-zone "Mars/Olympus" is not an IANA time zone`},
		{[]string{"-zone", "Local"}, "is not an IANA time zone"},
		{[]string{"0", "9", "*", "*", "*"}, "quote a cron expression"},
		{[]string{"-cron", "61 9 * * *"}, "cronSchedule.expression"},
		{[]string{"-types", "github.{"}, "eventTypes"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), exampletest.Wait)
			defer cancel()
			err := run(ctx, append([]string{"-url", s.MCPEndpoint, "-token", token}, tc.args...), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
