package mcpe_test

import (
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// TestHandlerSizeBounded checks that a handler, whose every field is within
// its own bound, is refused when it is too large as a whole.
func TestHandlerSizeBounded(t *testing.T) {
	types := []mcpe.HandlerType{mcpe.HandlerBash, mcpe.HandlerAgent}
	args := make([]string, mcpe.MaxHandlerArgs)
	for i := range args {
		args[i] = strings.Repeat("x", 1024)
	}
	h := &mcpe.HandlerSpec{Type: mcpe.HandlerBash, Command: "notify", Args: args}
	if err := h.Validate(types); err == nil || !strings.Contains(err.Error(), "handler: is ") || !strings.Contains(err.Error(), "at most 32768 are accepted") {
		t.Errorf("a handler of 64 KiB: %v; want a refusal of its size", err)
	}
	h.Args = args[:8]
	if err := h.Validate(types); err != nil {
		t.Errorf("a handler of 8 KiB: %v", err)
	}
	big := strings.Repeat("p", mcpe.MaxHandlerText)
	a := &mcpe.HandlerSpec{Type: mcpe.HandlerAgent, SystemPrompt: big, Instructions: big, Model: "m"}
	if err := a.Validate(types); err == nil {
		t.Error("an agent handler of 32 KiB of prompts was accepted")
	}
}
