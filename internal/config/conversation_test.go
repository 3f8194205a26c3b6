package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
)

func TestConversation(t *testing.T) {
	c, err := Parse(strings.NewReader(`
conversation:
  context: off
  principals:
    alice: full
    local: summary
`))
	if err != nil {
		t.Fatal(err)
	}
	want := mcpserver.ConversationOptions{
		Context:    mcpserver.ContextOff,
		Principals: map[string]mcpserver.ContextMode{"alice": mcpserver.ContextFull, "local": mcpserver.ContextSummary},
	}
	if diff := cmp.Diff(want, c.Conversation.Options()); diff != "" {
		t.Errorf("options mismatch (-want +got):\n%s", diff)
	}
}

func TestConversationErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"conversation:\n  context: loud\n", `conversation.context: "loud" is not a context mode; use "off", "summary" or "full"`},
		{"conversation:\n  principals:\n    alice: all\n", `conversation.principals.alice: "all" is not a context mode`},
		{"conversation:\n  principals:\n    alice: ''\n", `conversation.principals.alice: is empty`},
		{"conversation:\n  principals:\n    alice: [full]\n", `cannot unmarshal`},
	} {
		_, err := Parse(strings.NewReader(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v; want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}
