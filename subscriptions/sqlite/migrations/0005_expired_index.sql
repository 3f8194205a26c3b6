-- A principal's expired subscriptions, oldest first: creating a
-- subscription counts them (they share the principal's quota) and drops the
-- oldest to make room, without reading the principal's live ones.
CREATE INDEX subscriptions_expired ON subscriptions (principal, expired_at, created_at, id)
    WHERE status = 'expired';
