package mcpe

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
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

// patternMeta are the characters that make an entry a pattern rather than
// an exact type.
const patternMeta = `*?[]{}\`

// Pattern is a parsed eventTypes entry. The language is the one of
// github.com/gobwas/glob with no separators, which the server matches with;
// this parser is the reference for what is accepted and how a mistake is
// explained, and its matcher (a regular expression, linear in the type) is
// what clients use.
type Pattern struct {
	text string
	// prefix is the literal text before the first meta character; for an
	// exact pattern it is the whole type.
	prefix string
	exact  bool
	// alternatives is true when the pattern has a {...} group.
	alternatives bool
	// re is the matcher, compiled on first use; nil for an exact pattern.
	re *lazyRegexp
}

type lazyRegexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
	err  error
}

func (l *lazyRegexp) get() (*regexp.Regexp, error) {
	l.once.Do(func() { l.re, l.err = regexp.Compile(l.expr) })
	return l.re, l.err
}

// ParsePattern validates and parses one eventTypes entry. The error is an
// *InvalidError naming field (such as "filter.eventTypes[2]") that says what
// is wrong and what the language accepts.
func ParsePattern(field, text string) (Pattern, error) {
	if text == "" {
		return Pattern{}, Invalid(field, "an entry is empty; give a type such as \"github.push\" or a pattern such as \"github.*\" (\"*\" matches everything)")
	}
	if len(text) > MaxPatternLength {
		return Pattern{}, Invalid(field, "an entry is %d characters long; at most %d are accepted", len(text), MaxPatternLength)
	}
	meta := strings.IndexAny(text, patternMeta)
	if meta < 0 {
		if err := ValidateType(text); err != nil {
			return Pattern{}, Invalid(field, "%q is neither a valid event type nor a pattern: %s. %s", text, err.(*InvalidError).Message, PatternHelp)
		}
		return Pattern{text: text, prefix: text, exact: true}, nil
	}
	for _, r := range text {
		if r <= ' ' || r == 0x7f || r > 0x7e {
			return Pattern{}, Invalid(field, "%q contains %q, which no event type contains; types use letters, digits, '_', '-' and '.'", text, r)
		}
	}
	expr, caret, err := translate(text)
	if caret {
		return Pattern{}, Invalid(field, "%q writes a negated set as [^...]; here it is [!...] (\"[!0-9]\" matches one character that is not a digit), and [^...] would match a literal '^', which no event type contains", text)
	}
	if err != nil {
		return Pattern{}, Invalid(field, "%q is not a valid pattern (%v). %s", text, err, PatternHelp)
	}
	return Pattern{
		text:         text,
		prefix:       text[:meta],
		alternatives: strings.Contains(text, "{"),
		re:           &lazyRegexp{expr: expr},
	}, nil
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.text }

// Exact reports whether the pattern is a plain type with no wildcard.
func (p Pattern) Exact() bool { return p.exact }

// Prefix returns the literal text every matching type starts with.
func (p Pattern) Prefix() string { return p.prefix }

// Alternatives reports whether the pattern has a {...} group.
func (p Pattern) Alternatives() bool { return p.alternatives }

// Match reports whether eventType matches the pattern, in time linear in
// the length of eventType.
func (p Pattern) Match(eventType string) bool {
	if p.exact || p.re == nil {
		return p.text == eventType
	}
	re, err := p.re.get()
	return err == nil && re.MatchString(eventType)
}

// syntaxError is a malformed pattern: what is wrong, and the byte offset the
// reader had reached, as github.com/gobwas/glob reports it.
type syntaxError struct {
	reason string
	offset int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.reason, e.offset) }

// translate reads text with the glob grammar and returns the equivalent
// anchored regular expression. caret reports a set opened with '^', the
// regular-expression way of negating it, which the grammar reads as a
// literal '^'.
func translate(text string) (expr string, caret bool, err error) {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	lex := &lexer{data: text}
	depth := 0
	for {
		tok := lex.next()
		switch tok.typ {
		case tokEOF:
			if depth > 0 {
				return "", caret, &syntaxError{"unclosed `{`", lex.pos}
			}
			b.WriteString(`)$`)
			return b.String(), caret, nil
		case tokError:
			return "", caret, &syntaxError{tok.data, lex.pos}
		case tokText:
			b.WriteString(regexp.QuoteMeta(tok.data))
		case tokAny, tokSuper:
			b.WriteString(`.*`)
		case tokSingle:
			b.WriteString(`.`)
		case tokTermsOpen:
			depth++
			b.WriteString(`(?:`)
		case tokSeparator:
			b.WriteString(`|`)
		case tokTermsClose:
			depth--
			b.WriteString(`)`)
		case tokRangeOpen:
			class, neg, err := readClass(lex)
			if err != nil {
				return "", caret, err
			}
			caret = caret || neg
			b.WriteString(class)
		}
	}
}

// readClass reads a character class after its '[' and returns it as a
// regular-expression class; caret reports a set that starts with '^'.
func readClass(lex *lexer) (class string, caret bool, err error) {
	var b strings.Builder
	b.WriteByte('[')
	lo, hi := rune(-1), rune(-1)
	chars := false
	for first := true; ; first = false {
		tok := lex.next()
		if first && (tok.typ == tokText || tok.typ == tokRangeLo) && strings.HasPrefix(tok.data, "^") {
			caret = true
		}
		switch tok.typ {
		case tokEOF:
			return "", false, &syntaxError{"unclosed `[`", lex.pos}
		case tokError:
			return "", false, &syntaxError{tok.data, lex.pos}
		case tokNot:
			b.WriteByte('^')
		case tokRangeLo:
			lo, _ = utf8.DecodeRuneInString(tok.data)
			fmt.Fprintf(&b, `\x{%x}-`, lo)
		case tokRangeHi:
			hi, _ = utf8.DecodeRuneInString(tok.data)
			if hi < lo {
				return "", false, &syntaxError{"range hi character is less than lo", lex.pos}
			}
			fmt.Fprintf(&b, `\x{%x}`, hi)
		case tokText:
			chars = true
			for _, r := range tok.data {
				fmt.Fprintf(&b, `\x{%x}`, r)
			}
		case tokRangeClose:
			if chars == (lo >= 0 && hi >= 0) {
				return "", false, &syntaxError{"could not parse range", lex.pos}
			}
			b.WriteByte(']')
			return b.String(), caret, nil
		}
	}
}
