package mcpe

import "strings"

// The lexer below reads the glob grammar token by token, as
// github.com/gobwas/glob/syntax does (the server matches with that library),
// so that both accept the same patterns and report the same offsets:
// ParsePattern's answers must not depend on which side reads a pattern.
// ParsePattern passes it only printable ASCII, so a character is a byte.

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
	tokTermsOpen
	tokTermsClose
)

type token struct {
	typ  tokenType
	data string
}

// eofRune marks the end of the input; no pattern rune is negative.
const eofRune rune = -1

// The characters that end a text token, outside and inside {...}.
const textBreakers, termsBreakers = "?*[{", "?*[{},"

type lexer struct {
	data  string
	pos   int
	err   string
	queue []token
	depth int // open {...} groups
	size  int // of the last character read: 1, or 0 at the end
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

// read returns the next character, or eofRune at the end.
func (l *lexer) read() rune {
	if l.pos == len(l.data) {
		l.size = 0
		return eofRune
	}
	l.pos, l.size = l.pos+1, 1
	return rune(l.data[l.pos-1])
}

// unread steps back over the last character read.
func (l *lexer) unread() { l.pos -= l.size }

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
		if l.pos < len(l.data) && l.data[l.pos] == '-' {
			l.pos++
			l.push(tokRangeLo, string(r))
			wantHi = true
			continue
		}
		l.unread()
		l.fetchText("]")
		wantClose = true
	}
}

func (l *lexer) fetchText(breakers string) {
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
			if strings.ContainsRune(breakers, r) {
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
