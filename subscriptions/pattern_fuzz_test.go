package subscriptions_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gobwas/glob"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// FuzzPatternAgreesWithGlob checks that mcpe.ParsePattern, which decides what
// is accepted (and what clients match with), reads the grammar as
// github.com/gobwas/glob does: a pattern one accepts the other accepts, with
// the same syntax error otherwise, and both match the same types.
func FuzzPatternAgreesWithGlob(f *testing.F) {
	for _, s := range []string{
		"github.*", "a?c", "[a-c]x", "[!ab]", "{a,b}.c", "{,a}b", "a{b,{c,d}}", `{a\,b,c\}}`, "[]", "[a-]",
		"[a-bc]", `a\`, "{a", "a}", "]", "**", "[^a]", "[!^a]", "a[b-a]", "{[ab-],x}", "x[!]", "[\\]]",
	} {
		f.Add(s, "abc")
	}
	f.Fuzz(func(t *testing.T, text, typ string) {
		p, err := mcpe.ParsePattern("eventTypes", text)
		var ie *mcpe.InvalidError
		if err != nil && !errors.As(err, &ie) {
			t.Fatalf("ParsePattern(%q): %v is not an *InvalidError", text, err)
		}
		if err != nil || p.Exact() {
			return // refused before the grammar, or a plain type
		}
		g, gerr := glob.Compile(text)
		if gerr != nil {
			t.Fatalf("ParsePattern accepts %q, glob refuses it: %v", text, gerr)
		}
		if got, want := p.Match(typ), g.Match(typ); got != want {
			t.Fatalf("pattern %q: mcpe Match(%q) = %t, glob says %t", text, typ, got, want)
		}
	})
}

// TestPatternSyntaxErrorsAgreeWithGlob checks that a pattern glob refuses is
// refused by mcpe.ParsePattern with glob's reason and offset.
func TestPatternSyntaxErrorsAgreeWithGlob(t *testing.T) {
	for _, text := range []string{"{a", "a{b,{c}", "[]", "[a-", "[a-bc]", `a\`, "[b-a]", "x[", "[!]", "{[}", "a{b[c-]d}"} {
		_, gerr := glob.Compile(text)
		var se *glob.SyntaxError
		if !errors.As(gerr, &se) {
			t.Fatalf("glob.Compile(%q) = %v, want a syntax error", text, gerr)
		}
		_, err := mcpe.ParsePattern("eventTypes", text)
		var ie *mcpe.InvalidError
		if !errors.As(err, &ie) {
			t.Fatalf("ParsePattern(%q) = %v, want an *InvalidError", text, err)
		}
		want := fmt.Sprintf("(%s at offset %d)", se.Reason, se.Offset)
		if got := ie.Message; !strings.Contains(got, want) {
			t.Errorf("ParsePattern(%q) = %q; want glob's reason %q at offset %d", text, got, se.Reason, se.Offset)
		}
	}
}
