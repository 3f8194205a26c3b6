package mcpe

import "fmt"

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

// Invalid returns an *InvalidError for field with a formatted message.
func Invalid(field, format string, args ...any) *InvalidError {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
}
