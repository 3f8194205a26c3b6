package subscriptions

import (
	"fmt"
	"strings"
	"time"
)

// parseFutureTime parses an RFC 3339 time that must be after now.
func parseFutureTime(field, s string, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		if _, err2 := time.Parse("2006-01-02T15:04:05", strings.TrimSuffix(s, "Z")); err2 == nil {
			return time.Time{}, invalid(field, "%q has no UTC offset; add one, e.g. %q", s, now.UTC().Add(time.Hour).Format(time.RFC3339))
		}
		return time.Time{}, invalid(field, "%q is not an RFC 3339 time; use e.g. %q", s, now.UTC().Add(time.Hour).Format(time.RFC3339))
	}
	if !t.After(now) {
		return time.Time{}, invalid(field, "%s is in the past (the server's time is %s); give a later time, or leave it out for no expiry",
			t.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return t.UTC(), nil
}

// checkID validates a subscription ID argument.
func checkID(id string) error {
	if id == "" {
		return invalid("subscriptionId", "is required; events_list shows your subscriptions and their IDs")
	}
	if len(id) > 64 {
		return &NotFoundError{ID: fmt.Sprintf("%.64s…", id)}
	}
	return nil
}
