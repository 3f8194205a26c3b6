package subscriptions

import (
	"context"
	"fmt"
	"slices"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// PublishFor is Publish for one principal: ev is stored and delivered only
// to principal's matching subscriptions (and their handlers), never to
// another principal's. It carries what a principal says about itself, such
// as its user's messages (conversation.user_message), which no other
// principal may see.
func (s *Service) PublishFor(ctx context.Context, principal string, ev mcpe.Event) (PublishResult, error) {
	if principal == "" {
		return PublishResult{}, fmt.Errorf("publish for a principal: %w", invalid("principal", "is empty"))
	}
	return s.publish(ctx, ev, principal)
}

// ownedBy keeps the entries of principal. Index.Recheck, which a commit
// may run on the result, keeps or replaces entries and never adds one, so
// the scope holds until the event is committed.
func ownedBy(matches []*Entry, principal string) []*Entry {
	return slices.DeleteFunc(slices.Clone(matches), func(e *Entry) bool { return e.Principal != principal })
}
