package postgres

import "github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"

// ChangesKept is how long a subscription change stays readable by the
// other processes sharing the database (subscriptions.Shared).
const ChangesKept = storecore.ChangesKept
