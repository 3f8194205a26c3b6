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

// Bounds on what one pattern may cost to match. A {...} group multiplies
// the alternatives of what surrounds it ("{a,b}.{c,d}" is four), and each
// wildcard can keep a match attempt alive across the whole type; together
// they bound the work of matching one type, which a server does for every
// new type an event brings.
const (
	MaxPatternAlternatives = 64
	MaxPatternWildcards    = 16
)

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
	// cost is what matching the pattern costs, in the units of Cost.
	cost int
	// suffix is the literal text every matching type ends with.
	suffix string
	// re returns the matcher, compiled on first use; nil for an exact
	// pattern.
	re func() (*regexp.Regexp, error)
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
	tr, err := translate(text)
	if tr.caret {
		return Pattern{}, Invalid(field, "%q writes a negated set as [^...]; here it is [!...] (\"[!0-9]\" matches one character that is not a digit), and [^...] would match a literal '^', which no event type contains", text)
	}
	if err != nil {
		return Pattern{}, Invalid(field, "%q is not a valid pattern (%v). %s", text, err, PatternHelp)
	}
	if tr.alternatives > MaxPatternAlternatives {
		return Pattern{}, Invalid(field, "%q has %s alternatives once its {...} groups are expanded; at most %d are accepted. Use fewer or smaller groups, or give several eventTypes entries", text, countText(tr.alternatives), MaxPatternAlternatives)
	}
	if tr.wildcards > MaxPatternWildcards {
		return Pattern{}, Invalid(field, "%q has %d wildcards (*, ? and [...]); at most %d are accepted", text, tr.wildcards, MaxPatternWildcards)
	}
	return Pattern{
		text:         text,
		prefix:       text[:meta],
		alternatives: strings.Contains(text, "{"),
		cost:         (1 + tr.wildcards) * tr.alternatives,
		suffix:       literalSuffix(text),
		re:           sync.OnceValues(func() (*regexp.Regexp, error) { return regexp.Compile(tr.expr) }),
	}, nil
}

// countText writes n, or "more than a million" when it saturated.
func countText(n int) string {
	if n >= saturated {
		return "more than a million"
	}
	return fmt.Sprint(n)
}

// literalSuffix returns the literal text after the last meta character of
// a pattern, when no escape makes reading it ambiguous.
func literalSuffix(text string) string {
	i := strings.LastIndexAny(text, patternMeta)
	if i < 0 || text[i] == '\\' || strings.Contains(text, "\\") {
		return ""
	}
	return text[i+1:]
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.text }

// Exact reports whether the pattern is a plain type with no wildcard.
func (p Pattern) Exact() bool { return p.exact }

// Prefix returns the literal text every matching type starts with.
func (p Pattern) Prefix() string { return p.prefix }

// Alternatives reports whether the pattern has a {...} group.
func (p Pattern) Alternatives() bool { return p.alternatives }

// Cost is what matching the pattern against one type costs: zero for an
// exact type, which is a look-up; otherwise (1 + its wildcards) times its
// alternatives once {...} groups are expanded. A server bounds the sum over
// each principal's patterns.
func (p Pattern) Cost() int { return p.cost }

// Match reports whether eventType matches the pattern, in time linear in
// the length of eventType.
func (p Pattern) Match(eventType string) bool {
	if p.exact || p.re == nil {
		return p.text == eventType
	}
	if !strings.HasSuffix(eventType, p.suffix) {
		return false
	}
	re, err := p.re()
	return err == nil && re.MatchString(eventType)
}

// syntaxError is a malformed pattern: what is wrong, and the byte offset the
// reader had reached, as github.com/gobwas/glob reports it.
type syntaxError struct {
	reason string
	offset int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.reason, e.offset) }

// translation is a pattern read with the glob grammar.
type translation struct {
	// expr is the equivalent anchored regular expression.
	expr string
	// caret reports a set opened with '^', the regular-expression way of
	// negating it, which the grammar reads as a literal '^'.
	caret bool
	// wildcards counts *, ** , ? and [...]; alternatives counts the
	// alternatives once {...} groups are expanded (at most saturated).
	wildcards, alternatives int
}

// saturated caps the counting of alternatives.
const saturated = 1 << 20

// group counts the alternatives of a {...} group being read: those of the
// alternatives already closed, and the product so far of the open one.
type group struct{ sum, product int }

// translate reads text with the glob grammar.
func translate(text string) (translation, error) {
	var tr translation
	var b strings.Builder
	b.WriteString(`^(?s:`)
	lex := &lexer{data: text}
	stack := []group{{product: 1}} // the top level is a group of one
	top := func() *group { return &stack[len(stack)-1] }
	for {
		tok := lex.next()
		switch tok.typ {
		case tokEOF:
			if len(stack) > 1 {
				return tr, &syntaxError{"unclosed `{`", lex.pos}
			}
			b.WriteString(`)$`)
			tr.expr, tr.alternatives = b.String(), stack[0].product
			return tr, nil
		case tokError:
			return tr, &syntaxError{tok.data, lex.pos}
		case tokText:
			b.WriteString(regexp.QuoteMeta(tok.data))
		case tokAny, tokSuper:
			tr.wildcards++
			b.WriteString(`.*`)
		case tokSingle:
			tr.wildcards++
			b.WriteString(`.`)
		case tokTermsOpen:
			stack = append(stack, group{product: 1})
			b.WriteString(`(?:`)
		case tokSeparator:
			g := top()
			g.sum, g.product = min(g.sum+g.product, saturated), 1
			b.WriteString(`|`)
		case tokTermsClose:
			g := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			top().product = min(top().product*min(g.sum+g.product, saturated), saturated)
			b.WriteString(`)`)
		case tokRangeOpen:
			tr.wildcards++
			class, neg, err := readClass(lex)
			if err != nil {
				return tr, err
			}
			tr.caret = tr.caret || neg
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
