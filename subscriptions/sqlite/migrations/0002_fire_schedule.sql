-- The buffered channel of each subscription (cron or scheduled; NULL for
-- realtime only), so that the scheduler of each channel finds its due fires
-- and its next one through an index, without reading deliveries.
ALTER TABLE subscriptions ADD COLUMN timed TEXT;

UPDATE subscriptions SET timed = (
    SELECT value FROM json_each(subscriptions.delivery, '$.channels')
    WHERE value IN ('cron', 'scheduled') LIMIT 1
);

CREATE INDEX subscriptions_next_fire ON subscriptions (timed, next_fire_at, id)
    WHERE status = 'active' AND next_fire_at IS NOT NULL;
