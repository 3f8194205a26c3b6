package subscriptions

import (
	"fmt"

	"github.com/gobwas/glob"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Pattern is a compiled eventTypes entry: mcpe.ParsePattern decides what is
// accepted and how a mistake is explained; github.com/gobwas/glob matches.
type Pattern struct {
	mcpe.Pattern
	// glob is nil for an exact pattern, and for a pattern with {...}
	// alternatives: glob backtracks through those in exponential time
	// (matching "{*,*}{*,*}{*,*}{*,*}{*,*}{*,*}z*d" against a 42-character
	// type takes minutes), while mcpe.Pattern's regular expression takes
	// time linear in the type.
	glob *glob.Pattern
}

// CompilePattern validates and compiles one eventTypes entry. The error is an
// *mcpe.InvalidError for field "eventTypes".
func CompilePattern(text string) (Pattern, error) {
	p, err := mcpe.ParsePattern("eventTypes", text)
	if err != nil {
		return Pattern{}, err
	}
	return compileParsed(p)
}

// compileParsed gives a parsed pattern its matcher.
func compileParsed(p mcpe.Pattern) (Pattern, error) {
	if p.Exact() || p.Alternatives() {
		return Pattern{Pattern: p}, nil
	}
	g, err := glob.Compile(p.String())
	if err != nil {
		// mcpe.ParsePattern reads the grammar as glob does
		// (FuzzPatternAgreesWithGlob); this is a bug, not bad input.
		return Pattern{}, fmt.Errorf("pattern %q: parsed by mcpe but refused by glob: %w", p.String(), err)
	}
	return Pattern{Pattern: p, glob: g}, nil
}

// Match reports whether eventType matches the pattern.
func (p Pattern) Match(eventType string) bool {
	if p.glob == nil {
		return p.Pattern.Match(eventType)
	}
	return p.glob.Match(eventType)
}
