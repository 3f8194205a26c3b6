package subscriptions

import (
	"slices"

	"cel.dev/cel-go/cel"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Matcher is a compiled filter.
type Matcher struct {
	patterns []Pattern
	tags     []string
	// priorities is a bit mask of the accepted priorities; 0 accepts all.
	priorities uint8
	// where is the compiled mcpe.Filter.Where (nil for none), and
	// whereCost its estimated cost.
	where     cel.Program
	whereCost int
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
	if f.Where != "" {
		m.where, m.whereCost, err = compileWhere(f.Where)
	}
	return m, err
}

// Patterns returns the compiled eventTypes; empty means any type.
func (m *Matcher) Patterns() []Pattern { return m.patterns }

// Match reports whether the event passes the whole filter.
func (m *Matcher) Match(ev *mcpe.Event) bool {
	if len(m.patterns) > 0 && !slices.ContainsFunc(m.patterns, func(p Pattern) bool { return p.Match(ev.Type) }) {
		return false
	}
	return m.matchRest(&eventVars{ev: ev})
}

// matchRest checks the tag, priority and where parts, the ones the index
// does not cover, in that order.
func (m *Matcher) matchRest(v *eventVars) bool {
	ev := v.ev
	if m.priorities != 0 && m.priorities&priorityBit(ev.Metadata.Priority) == 0 {
		return false
	}
	if len(m.tags) > 0 && !slices.ContainsFunc(ev.Metadata.Tags, func(t string) bool { return slices.Contains(m.tags, t) }) {
		return false
	}
	return m.where == nil || v.where(m.where)
}

// typeOnly reports whether the matcher has no tag, priority or where part,
// so that a type match is a full match.
func (m *Matcher) typeOnly() bool { return m.priorities == 0 && len(m.tags) == 0 && m.where == nil }
