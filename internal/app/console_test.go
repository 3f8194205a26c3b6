package app

import (
	"strings"
	"testing"
)

// TestShortSessionID checks that the console never shows a whole session
// ID, which is the credential of a session without a token.
func TestShortSessionID(t *testing.T) {
	id := "ER55CLI3NDLA6PJT452RSMBLV7"
	got := shortSessionID(id)
	if strings.Contains(got, id) || !strings.HasPrefix(got, "ER55CL") || len(got) >= len(id) {
		t.Errorf("shortSessionID(%q) = %q; want its first characters only", id, got)
	}
	if got := shortSessionID("ab"); got != "ab" {
		t.Errorf("shortSessionID(%q) = %q", "ab", got)
	}
}
