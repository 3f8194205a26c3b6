-- Throttle windows (mcpe.Throttle): one row per open group of a throttled
-- realtime subscription. The group's first event is delivered and opens the
-- row; each later one in the window only counts in folded and becomes
-- event_id (the latest). When window_end passes, a row that folded events is
-- delivered as one 'event' inbox entry, whose remaining holds folded, and its
-- window starts again (window_length later); a row that folded none is
-- deleted, and so is one whose subscription is gone or not active.
CREATE TABLE throttle (
    subscription_id TEXT NOT NULL,
    group_key       TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    folded          INTEGER NOT NULL DEFAULT 0,
    window_end      INTEGER NOT NULL,
    window_length   INTEGER NOT NULL,
    PRIMARY KEY (subscription_id, group_key)
) STRICT, WITHOUT ROWID;

CREATE INDEX throttle_by_end ON throttle (window_end);
