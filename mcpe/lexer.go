package mcpe

import (
	"slices"
	"unicode/utf8"
)

// The lexer below reads the glob grammar token by token, as
// github.com/gobwas/glob/syntax does (the server matches with that library),
// so that both accept the same patterns and report the same offsets:
// ParsePattern's answers must not depend on which side reads a pattern.

type tokenType int

const (
	tokEOF tokenType = iota
	tokError
	tokText
	tokAny
	tokSuper
	tokSingle
	tokNot
	tokSeparator
	tokRangeOpen
	tokRangeClose
	tokRangeLo
	tokRangeHi
	tokRangeBetween
	tokTermsOpen
	tokTermsClose
)

type token struct {
	typ  tokenType
	data string
}

// eofRune marks the end of the input; no pattern rune is negative.
const eofRune rune = -1

var (
	textBreakers  = []rune{'?', '*', '[', '{'}
	termsBreakers = []rune{'?', '*', '[', '{', '}', ','}
)

type lexer struct {
	data   string
	pos    int
	err    string
	queue  []token
	depth  int // open {...} groups
	last   rune
	size   int
	reread bool
}

// next returns the next token; EOF and an error repeat once reached. An
// error wins over the tokens already queued.
func (l *lexer) next() token {
	for {
		if l.err != "" {
			return token{tokError, l.err}
		}
		if len(l.queue) > 0 {
			t := l.queue[0]
			l.queue = l.queue[1:]
			return t
		}
		l.fetch()
	}
}

func (l *lexer) push(t tokenType, data string) { l.queue = append(l.queue, token{t, data}) }

func (l *lexer) peek() (rune, int) {
	if l.pos == len(l.data) {
		return eofRune, 0
	}
	r, w := utf8.DecodeRuneInString(l.data[l.pos:])
	if r == utf8.RuneError && w == 1 {
		l.err = "invalid UTF-8 sequence"
		return eofRune, 0
	}
	return r, w
}

func (l *lexer) read() rune {
	if l.reread {
		l.reread = false
		l.pos += l.size
		return l.last
	}
	r, w := l.peek()
	l.pos += w
	l.last, l.size = r, w
	return r
}

func (l *lexer) unread() {
	l.pos -= l.size
	l.reread = true
}

func (l *lexer) fetch() {
	r := l.read()
	switch {
	case r == eofRune:
		l.push(tokEOF, "")
	case r == '{':
		l.depth++
		l.push(tokTermsOpen, "{")
	case r == ',' && l.depth > 0:
		l.push(tokSeparator, ",")
	case r == '}' && l.depth > 0:
		l.push(tokTermsClose, "}")
		l.depth--
	case r == '[':
		l.push(tokRangeOpen, "[")
		l.fetchRange()
	case r == '?':
		l.push(tokSingle, "?")
	case r == '*':
		if l.read() == '*' {
			l.push(tokSuper, "**")
		} else {
			l.unread()
			l.push(tokAny, "*")
		}
	default:
		l.unread()
		if l.depth > 0 {
			l.fetchText(termsBreakers)
		} else {
			l.fetchText(textBreakers)
		}
	}
}

func (l *lexer) fetchRange() {
	var wantHi, wantClose, seenNot bool
	for {
		r := l.read()
		switch {
		case r == eofRune:
			l.err = "unexpected end of input"
			return
		case wantClose:
			if r != ']' {
				l.err = "expected close range character"
			} else {
				l.push(tokRangeClose, "]")
			}
			return
		case wantHi:
			l.push(tokRangeHi, string(r))
			wantClose = true
			continue
		case !seenNot && r == '!':
			l.push(tokNot, "!")
			seenNot = true
			continue
		}
		if n, w := l.peek(); n == '-' {
			l.pos += w
			l.push(tokRangeLo, string(r))
			l.push(tokRangeBetween, "-")
			wantHi = true
			continue
		}
		l.unread()
		l.fetchText([]rune{']'})
		wantClose = true
	}
}

func (l *lexer) fetchText(breakers []rune) {
	var data []rune
	escaped := false
	for {
		r := l.read()
		if r == eofRune {
			if escaped {
				l.err = "trailing backslash"
			}
			break
		}
		if !escaped {
			if r == '\\' {
				escaped = true
				continue
			}
			if slices.Contains(breakers, r) {
				l.unread()
				break
			}
		}
		escaped = false
		data = append(data, r)
	}
	if len(data) > 0 {
		l.push(tokText, string(data))
	}
}
