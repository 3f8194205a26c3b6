package subscriptions

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/gobwas/glob"
	"github.com/gobwas/glob/syntax"
)

// MaxPatternLength bounds an eventTypes entry.
const MaxPatternLength = 256

// PatternHelp explains the pattern language; tool descriptions and error
// messages quote it.
const PatternHelp = "An eventTypes entry is an exact type such as \"github.push\" or a glob pattern: " +
	"\"*\" matches any run of characters, dots included (\"github.*\" matches \"github.push\" and " +
	"\"github.issue.opened\" but not \"github\"); \"?\" matches one character; \"[abc]\", \"[a-z]\" and " +
	"\"[!abc]\" match one character of (or not of) a set; \"{push,pull_request.*}\" matches any of the " +
	"comma-separated alternatives; \"\\\\\" escapes the next character. \"*\" alone matches every event."

// Pattern is a compiled eventTypes entry.
type Pattern struct {
	text string
	// prefix is the literal text before the first meta character; for an
	// exact pattern it is the whole type.
	prefix string
	// glob is nil for an exact pattern.
	glob *glob.Pattern
	// re, when set, matches in place of glob. Patterns with alternatives get
	// one: glob backtracks through them in exponential time (matching
	// "{*,*}{*,*}{*,*}{*,*}{*,*}{*,*}z*d" against a 42-character type takes
	// minutes), while a regexp takes time linear in the type.
	re *regexp.Regexp
}

// CompilePattern validates and compiles one eventTypes entry. The error is an
// *InvalidError for field "eventTypes".
func CompilePattern(text string) (Pattern, error) {
	return compilePattern("eventTypes", text)
}

func compilePattern(field, text string) (Pattern, error) {
	if text == "" {
		return Pattern{}, invalid(field, "an entry is empty; give a type such as \"github.push\" or a pattern such as \"github.*\" (\"*\" matches everything)")
	}
	if len(text) > MaxPatternLength {
		return Pattern{}, invalid(field, "an entry is %d characters long; at most %d are accepted", len(text), MaxPatternLength)
	}
	meta := strings.IndexAny(text, `*?[]{}\`)
	if meta < 0 {
		if err := ValidateType(text); err != nil {
			return Pattern{}, invalid(field, "%q is neither a valid event type nor a pattern: %s. %s", text, err.(*InvalidError).Message, PatternHelp)
		}
		return Pattern{text: text, prefix: text}, nil
	}
	for _, r := range text {
		if r <= ' ' || r == 0x7f || r > 0x7e {
			return Pattern{}, invalid(field, "%q contains %q, which no event type contains; types use letters, digits, '_', '-' and '.'", text, r)
		}
	}
	if strings.Contains(text, "[^") && negatedWithCaret(text) {
		return Pattern{}, invalid(field, "%q writes a negated set as [^...]; here it is [!...] (\"[!0-9]\" matches one character that is not a digit), and [^...] would match a literal '^', which no event type contains", text)
	}
	g, err := glob.Compile(text)
	if err != nil {
		reason := err.Error()
		var se *glob.SyntaxError
		if errors.As(err, &se) {
			reason = fmt.Sprintf("%s at offset %d", se.Reason, se.Offset)
		}
		return Pattern{}, invalid(field, "%q is not a valid pattern (%s). %s", text, reason, PatternHelp)
	}
	p := Pattern{text: text, prefix: text[:meta], glob: g}
	if strings.Contains(text, "{") {
		if p.re, err = globRegexp(text); err != nil {
			return Pattern{}, invalid(field, "%q is not a valid pattern (%v). %s", text, err, PatternHelp)
		}
	}
	return p, nil
}

// negatedWithCaret reports whether a set in text opens with '^', the
// regular-expression way of negating it, which glob reads as a literal '^'.
func negatedWithCaret(text string) bool {
	lex := syntax.NewLexer(text)
	open := false
	for {
		tok := lex.Next()
		switch {
		case tok.Type == syntax.EOF || tok.Type == syntax.Error:
			return false
		case open && (tok.Type == syntax.Text || tok.Type == syntax.RangeLo) && strings.HasPrefix(tok.Data, "^"):
			return true
		}
		open = tok.Type == syntax.RangeOpen
	}
}

// globRegexp translates a pattern that glob.Compile accepted into the
// equivalent anchored regular expression, reading it with glob's own lexer.
func globRegexp(text string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	inClass := false
	lex := syntax.NewLexer(text)
	for {
		tok := lex.Next()
		switch tok.Type {
		case syntax.EOF:
			b.WriteString(`)$`)
			return regexp.Compile(b.String())
		case syntax.Text:
			if !inClass {
				b.WriteString(regexp.QuoteMeta(tok.Data))
				break
			}
			for _, r := range tok.Data {
				fmt.Fprintf(&b, `\x{%x}`, r)
			}
		case syntax.Any, syntax.Super:
			b.WriteString(`.*`)
		case syntax.Single:
			b.WriteString(`.`)
		case syntax.TermsOpen:
			b.WriteString(`(?:`)
		case syntax.TermSeparator:
			b.WriteString(`|`)
		case syntax.TermsClose:
			b.WriteString(`)`)
		case syntax.RangeOpen:
			inClass = true
			b.WriteString(`[`)
		case syntax.Not:
			b.WriteString(`^`)
		case syntax.RangeLo, syntax.RangeHi:
			r, _ := utf8.DecodeRuneInString(tok.Data)
			fmt.Fprintf(&b, `\x{%x}`, r)
		case syntax.RangeBetween:
			b.WriteString(`-`)
		case syntax.RangeClose:
			inClass = false
			b.WriteString(`]`)
		default:
			return nil, fmt.Errorf("unexpected %v", tok)
		}
	}
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.text }

// Exact reports whether the pattern is a plain type with no wildcard.
func (p Pattern) Exact() bool { return p.glob == nil }

// Prefix returns the literal text every matching type starts with.
func (p Pattern) Prefix() string { return p.prefix }

// Match reports whether eventType matches the pattern.
func (p Pattern) Match(eventType string) bool {
	switch {
	case p.glob == nil:
		return p.text == eventType
	case p.re != nil:
		return p.re.MatchString(eventType)
	}
	return p.glob.Match(eventType)
}
