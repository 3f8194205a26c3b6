package subscriptions

import (
	"errors"
	"fmt"
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
)

// InvalidError reports one bad input field. Its text is written for the model
// or person that sent the input: what was wrong and what is accepted.
type InvalidError struct {
	// Field is the path of the field, such as "filter.priority[1]".
	Field string
	// Message says what is wrong and what would be accepted.
	Message string
}

func (e *InvalidError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

func invalid(field, format string, args ...any) *InvalidError {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// NotFoundError names the subscription that could not be found.
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("subscription %q not found; events_list shows your subscriptions", e.ID)
}

// Unwrap makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// LimitError says how many subscriptions a principal may have.
type LimitError struct{ Max int }

func (e *LimitError) Error() string {
	return fmt.Sprintf("you already have %d active or paused subscriptions, the most this server allows; "+
		"remove one with events_unsubscribe or widen an existing filter with events_update", e.Max)
}

// Unwrap makes errors.Is(err, ErrLimitReached) true.
func (e *LimitError) Unwrap() error { return ErrLimitReached }
