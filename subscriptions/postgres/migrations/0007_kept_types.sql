-- The types posted to POST /v1/events lately (subscriptions.TypeStore), so
-- that the event catalog lists them after a restart. At most a few hundred
-- rows: KeepType adds a type only while there is room, and forgets those
-- not posted within the window.
CREATE TABLE kept_types (
    type      text PRIMARY KEY,
    source    text NOT NULL,
    last_seen timestamptz NOT NULL
);
