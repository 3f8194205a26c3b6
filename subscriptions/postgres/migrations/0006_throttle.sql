-- Throttle windows, as in subscriptions/sqlite's: one row per
-- open group of a throttled realtime subscription, which folds the group's
-- events until window_end; window_length is in milliseconds.
CREATE TABLE throttle (
    subscription_id text NOT NULL,
    group_key       text NOT NULL,
    event_id        text NOT NULL,
    folded          integer NOT NULL DEFAULT 0,
    window_end      timestamptz NOT NULL,
    window_length   bigint NOT NULL,
    PRIMARY KEY (subscription_id, group_key)
);

CREATE INDEX throttle_by_end ON throttle (window_end);
