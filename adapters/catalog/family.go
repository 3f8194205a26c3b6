package catalog

import "strings"

// A catalog type such as "alert.<alertname>.firing" stands for a family of
// types: <alertname> is any segment. A pattern selects the family when it
// could match one of its types, so "alert.KubePod*" and
// "alert.HighCPU.firing" find alert.<alertname>.firing, as "alert.*" does.
// The test is done on globs made of literal characters, '?' and '*': a
// placeholder becomes '*', a character class '?', and alternatives are
// expanded. It errs on the side of listing a family.

// maxAlternatives bounds the expansion of {a,b} alternatives; a pattern
// with more is taken to select every family.
const maxAlternatives = 64

// token is one element of a simple glob.
type token struct {
	kind byte // 'c' a literal character, '?' any one, '*' any run
	c    byte
}

type simpleGlob []token

// isFamily reports whether t has a placeholder segment.
func isFamily(t string) bool { return strings.Contains(t, "<") }

// familyGlob turns a family into a glob: each <...> becomes '*'.
func familyGlob(t string) simpleGlob {
	var g simpleGlob
	for i := 0; i < len(t); i++ {
		if t[i] == '<' {
			if j := strings.IndexByte(t[i:], '>'); j > 0 {
				g = append(g, token{kind: '*'})
				i += j
				continue
			}
		}
		g = append(g, token{kind: 'c', c: t[i]})
	}
	return g
}

// expandPattern turns a pattern of the filter language into the simple
// globs that together match at least what it matches. ok is false when it
// has more than maxAlternatives alternatives.
func expandPattern(p string) (globs []simpleGlob, ok bool) {
	x := expander{p: p}
	globs = x.sequence(false)
	return globs, !x.overflow
}

type expander struct {
	p        string
	pos      int
	overflow bool
}

// sequence reads up to the end of the pattern or, inside braces, to the
// next ',' or '}'.
func (x *expander) sequence(inBraces bool) []simpleGlob {
	out := []simpleGlob{{}}
	add := func(t token) {
		for i := range out {
			out[i] = append(out[i], t)
		}
	}
	for x.pos < len(x.p) && !x.overflow {
		c := x.p[x.pos]
		switch {
		case inBraces && (c == ',' || c == '}'):
			return out
		case c == '\\':
			x.pos++
			if x.pos < len(x.p) {
				add(token{kind: 'c', c: x.p[x.pos]})
				x.pos++
			}
		case c == '*':
			add(token{kind: '*'})
			x.pos++
		case c == '?':
			add(token{kind: '?'})
			x.pos++
		case c == '[':
			// A class is one character of a set: any one, for this test.
			end := strings.IndexByte(x.p[x.pos+1:], ']')
			if end < 0 {
				x.pos = len(x.p)
			} else {
				x.pos += end + 2
			}
			add(token{kind: '?'})
		case c == '{':
			x.pos++
			var alts []simpleGlob
			for !x.overflow {
				alts = append(alts, x.sequence(true)...)
				if len(alts) > maxAlternatives {
					x.overflow = true
					return nil
				}
				if x.pos < len(x.p) && x.p[x.pos] == ',' {
					x.pos++
					continue
				}
				if x.pos < len(x.p) && x.p[x.pos] == '}' {
					x.pos++
				}
				break
			}
			if len(out)*len(alts) > maxAlternatives {
				x.overflow = true
				return nil
			}
			var next []simpleGlob
			for _, prefix := range out {
				for _, alt := range alts {
					g := append(append(simpleGlob(nil), prefix...), alt...)
					next = append(next, g)
				}
			}
			out = next
		default:
			add(token{kind: 'c', c: c})
			x.pos++
		}
	}
	return out
}

// intersect reports whether some string matches both a and b.
func intersect(a, b simpleGlob) bool {
	seen := make([]bool, (len(a)+1)*(len(b)+1))
	var walk func(i, j int) bool
	walk = func(i, j int) bool {
		k := i*(len(b)+1) + j
		if seen[k] {
			return false // already explored, without success
		}
		seen[k] = true
		if i == len(a) && j == len(b) {
			return true
		}
		// A '*' matches nothing, or swallows what the other side has next.
		if i < len(a) && a[i].kind == '*' && (walk(i+1, j) || (j < len(b) && walk(i, j+1))) {
			return true
		}
		if j < len(b) && b[j].kind == '*' && (walk(i, j+1) || (i < len(a) && walk(i+1, j))) {
			return true
		}
		if i < len(a) && j < len(b) && a[i].kind != '*' && b[j].kind != '*' &&
			(a[i].kind == '?' || b[j].kind == '?' || a[i].c == b[j].c) {
			return walk(i+1, j+1)
		}
		return false
	}
	return walk(0, 0)
}

// familyMatcher returns whether a family could have a type that pattern
// matches.
func familyMatcher(pattern string) func(family string) bool {
	globs, ok := expandPattern(pattern)
	if !ok {
		return func(string) bool { return true }
	}
	return func(family string) bool {
		fg := familyGlob(family)
		for _, g := range globs {
			if intersect(g, fg) {
				return true
			}
		}
		return false
	}
}
