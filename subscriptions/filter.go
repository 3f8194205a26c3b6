package subscriptions

import (
	"fmt"
	"slices"
)

// MaxFilterPatterns bounds the eventTypes of one filter.
const MaxFilterPatterns = 64

// Filter selects events, as in MCPE section 5. Every part that is present must
// match: the type matches any of EventTypes, the event carries any of Tags,
// and its priority is one of Priority. A filter must have at least one part.
type Filter struct {
	// EventTypes are exact types or glob patterns; see PatternHelp.
	EventTypes []string `json:"eventTypes,omitempty"`
	// Tags match when the event carries at least one of them.
	Tags []string `json:"tags,omitempty"`
	// Priority matches when the event's priority is in the list.
	Priority []Priority `json:"priority,omitempty"`
}

// Matcher is a compiled Filter.
type Matcher struct {
	patterns []Pattern
	tags     []string
	// priorities is a bit mask of the accepted priorities; 0 accepts all.
	priorities uint8
}

// Compile validates f and returns its Matcher. The error is an *InvalidError
// whose field is relative to the filter, such as "filter.priority[0]".
func (f Filter) Compile() (*Matcher, error) {
	if f.EventTypes == nil && f.Tags == nil && f.Priority == nil {
		return nil, invalid("filter", "is empty; give at least one of eventTypes, tags or priority. To receive every event, use {\"eventTypes\": [\"*\"]}")
	}
	m := &Matcher{}
	if f.EventTypes != nil {
		if len(f.EventTypes) == 0 {
			return nil, invalid("filter.eventTypes", "is an empty list; give at least one type or pattern such as \"github.*\", or leave eventTypes out to match any type")
		}
		if len(f.EventTypes) > MaxFilterPatterns {
			return nil, invalid("filter.eventTypes", "has %d entries; at most %d are accepted. Patterns such as \"github.*\" or \"{a,b}.*\" cover many types at once", len(f.EventTypes), MaxFilterPatterns)
		}
		for i, text := range f.EventTypes {
			p, err := compilePattern(fmt.Sprintf("filter.eventTypes[%d]", i), text)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(m.patterns, func(q Pattern) bool { return q.text == p.text }) {
				m.patterns = append(m.patterns, p)
			}
		}
	}
	if f.Tags != nil {
		if len(f.Tags) == 0 {
			return nil, invalid("filter.tags", "is an empty list; give at least one tag, or leave tags out to match events with any tags")
		}
		if err := validateTags("filter.tags", f.Tags); err != nil {
			return nil, err
		}
		m.tags = slices.Clone(f.Tags)
	}
	if f.Priority != nil {
		if len(f.Priority) == 0 {
			return nil, invalid("filter.priority", "is an empty list; give at least one of %s, or leave priority out to match every priority", prioritiesText)
		}
		for i, p := range f.Priority {
			if !p.Valid() {
				return nil, invalid(fmt.Sprintf("filter.priority[%d]", i), "%q is not a priority; use %s", p, prioritiesText)
			}
			m.priorities |= p.bit()
		}
	}
	return m, nil
}

// Patterns returns the compiled eventTypes; empty means any type.
func (m *Matcher) Patterns() []Pattern { return m.patterns }

// Match reports whether the event passes the whole filter.
func (m *Matcher) Match(ev *Event) bool {
	if len(m.patterns) > 0 && !slices.ContainsFunc(m.patterns, func(p Pattern) bool { return p.Match(ev.Type) }) {
		return false
	}
	return m.matchRest(ev)
}

// matchRest checks the tag and priority parts, the ones the index does not
// cover.
func (m *Matcher) matchRest(ev *Event) bool {
	if m.priorities != 0 && m.priorities&ev.Metadata.Priority.bit() == 0 {
		return false
	}
	if len(m.tags) > 0 {
		for _, t := range ev.Metadata.Tags {
			if slices.Contains(m.tags, t) {
				return true
			}
		}
		return false
	}
	return true
}

// typeOnly reports whether the matcher has no tag or priority part, so that a
// type match is a full match.
func (m *Matcher) typeOnly() bool { return m.priorities == 0 && len(m.tags) == 0 }
