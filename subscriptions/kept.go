package subscriptions

import (
	"context"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// TypeStore keeps the types posted to POST /v1/events across restarts, for
// the event catalog. Both stores implement it.
type TypeStore interface {
	// KeepType records that an event of type t was posted at now, and
	// reports whether t is kept. Types last posted more than window before
	// now are forgotten. A type not kept yet is added only while fewer than
	// limit types are kept, and fewer than limit/4 (at least 1) of its
	// source (its first segment, "deploy" of "deploy.failed"): a flood of
	// new types pushes out none of those kept before it.
	KeepType(ctx context.Context, t string, now time.Time, window time.Duration, limit int) (bool, error)
	// KeptTypes returns the types posted within window before now, the
	// most recent first, then by name.
	KeptTypes(ctx context.Context, now time.Time, window time.Duration) ([]mcpe.SeenType, error)
}
