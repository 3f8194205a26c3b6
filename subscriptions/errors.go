package subscriptions

import (
	"errors"
	"fmt"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

var (
	// ErrNotFound is returned for a subscription that does not exist or that
	// belongs to another principal; the two cases are deliberately the same.
	ErrNotFound = errors.New("not found")
	// ErrLimitReached is returned when a principal already has the maximum
	// number of active and paused subscriptions.
	ErrLimitReached = errors.New("subscription limit reached")
	// ErrExpired is returned when changing a subscription that has expired.
	ErrExpired = errors.New("subscription expired")
	// ErrUnavailable is wrapped by a store that cannot keep what it is
	// given now (its database was removed or replaced): an event refused
	// with it may be sent again later.
	ErrUnavailable = errors.New("store unavailable")
	// ErrBusy is returned for an event one of whose owners has a live
	// session owed as much as it may be: the event is not accepted, and may
	// be sent again once the session has caught up (a second or so).
	ErrBusy = errors.New("a live session this event is for is too far behind; the event was not accepted, send it again in a second")
)

// invalid returns an *mcpe.InvalidError for field.
func invalid(field, format string, args ...any) *mcpe.InvalidError {
	return mcpe.Invalid(field, format, args...)
}

// NotFoundError names the subscription that could not be found.
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("subscription %q not found; events_list shows your subscriptions", e.ID)
}

// Unwrap makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// LimitError says how many subscriptions a principal may have, or, with
// Sessions, how many active ones the sessions without a token may have
// together.
type LimitError struct {
	Max      int
	Sessions bool
}

func (e *LimitError) Error() string {
	if e.Sessions {
		return fmt.Sprintf("the sessions without a token on this server already have %d active subscriptions together, "+
			"the most it allows; remove or pause subscriptions no longer needed (events_unsubscribe, events_pause), end "+
			"sessions no longer used, or have the operator configure auth.tokens, with which each principal has its own %d", e.Max, e.Max)
	}
	return fmt.Sprintf("you already have %d active or paused subscriptions, the most this server allows; "+
		"remove one with events_unsubscribe or widen an existing filter with events_update", e.Max)
}

// Unwrap makes errors.Is(err, ErrLimitReached) true.
func (e *LimitError) Unwrap() error { return ErrLimitReached }
