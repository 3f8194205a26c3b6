package subscriptions

import (
	"slices"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Matcher is a compiled filter.
type Matcher struct {
	patterns []Pattern
	tags     []string
	// priorities is a bit mask of the accepted priorities; 0 accepts all.
	priorities uint8
}

// CompileFilter validates f (mcpe.Filter.Patterns says what is refused, and
// how) and returns its Matcher.
func CompileFilter(f mcpe.Filter) (*Matcher, error) {
	parsed, err := f.Patterns()
	if err != nil {
		return nil, err
	}
	m := &Matcher{tags: slices.Clone(f.Tags)}
	for _, p := range parsed {
		cp, err := compileParsed(p)
		if err != nil {
			return nil, err
		}
		m.patterns = append(m.patterns, cp)
	}
	for _, p := range f.Priority {
		m.priorities |= priorityBit(p)
	}
	return m, nil
}

// Patterns returns the compiled eventTypes; empty means any type.
func (m *Matcher) Patterns() []Pattern { return m.patterns }

// Match reports whether the event passes the whole filter.
func (m *Matcher) Match(ev *mcpe.Event) bool {
	if len(m.patterns) > 0 && !slices.ContainsFunc(m.patterns, func(p Pattern) bool { return p.Match(ev.Type) }) {
		return false
	}
	return m.matchRest(ev)
}

// matchRest checks the tag and priority parts, the ones the index does not
// cover.
func (m *Matcher) matchRest(ev *mcpe.Event) bool {
	if m.priorities != 0 && m.priorities&priorityBit(ev.Metadata.Priority) == 0 {
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
