-- The schema of subscriptions/sqlite (through its migration 0006) in
-- PostgreSQL terms. A subscription's delivery count is delivered_base plus
-- the 'event' entries (and the events of the 'batch' entries) in the inbox
-- that list it, and its last delivery the later of last_delivered_base and
-- those entries: publishing writes only inbox rows, and retention folds the
-- entries it deletes into the base columns.
CREATE TABLE subscriptions (
    id                  text PRIMARY KEY,
    principal           text NOT NULL,
    status              text NOT NULL CHECK (status IN ('active', 'paused', 'expired')),
    filter              text NOT NULL,
    delivery            text NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    expires_at          timestamptz,
    expired_at          timestamptz,
    delivered_base      bigint NOT NULL DEFAULT 0,
    last_delivered_base timestamptz,
    -- The buffered channel (cron or scheduled; NULL for realtime only), and
    -- its next and last fire.
    timed               text,
    next_fire_at        timestamptz,
    last_fire_at        timestamptz,
    -- The handler (JSON, NULL for none), its signing secrets, why it was
    -- turned off, and what it did.
    handler             text,
    handler_secrets     text,
    handler_disabled    text,
    handler_succeeded   bigint NOT NULL DEFAULT 0,
    handler_failed      bigint NOT NULL DEFAULT 0,
    handler_last_run_at timestamptz,
    handler_last_error  text,
    handler_last_output text,
    handler_last_tools  text
);

CREATE INDEX subscriptions_by_principal ON subscriptions (principal, created_at);
CREATE INDEX subscriptions_by_expiry ON subscriptions (expires_at)
    WHERE status IN ('active', 'paused') AND expires_at IS NOT NULL;
CREATE INDEX subscriptions_next_fire ON subscriptions (timed, next_fire_at, id)
    WHERE status = 'active' AND next_fire_at IS NOT NULL;
CREATE INDEX subscriptions_expired ON subscriptions (principal, expired_at, created_at, id)
    WHERE status = 'expired';

-- Accepted events. The body is kept as the exact bytes Publish was given
-- (bytea, not jsonb, which would reorder keys). The unique index on (type,
-- source_event_id) refuses redeliveries while the row is kept (the dedup
-- window).
CREATE TABLE events (
    id              text PRIMARY KEY,
    type            text NOT NULL,
    source_event_id text,
    body            bytea NOT NULL,
    received_at     timestamptz NOT NULL
);

CREATE UNIQUE INDEX events_by_source ON events (type, source_event_id)
    WHERE source_event_id IS NOT NULL;

-- What was delivered to each principal, in order: one row per principal and
-- event, or one row per digest (kind 'batch', its event IDs in event_ids,
-- with how many were still waiting). Sequence numbers come from inbox_seq,
-- never reused, and are drawn while the transaction holds its principals'
-- rows locked (FOR UPDATE), so that a principal's entries commit in
-- sequence order and a reader by cursor never skips one.
CREATE SEQUENCE inbox_seq;

CREATE TABLE inbox (
    seq              bigint PRIMARY KEY,
    principal        text NOT NULL,
    subscription_ids text[] NOT NULL,
    kind             text NOT NULL,
    event_id         text,
    event_ids        text[],
    remaining        integer NOT NULL DEFAULT 0,
    pending          boolean NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL
);

CREATE INDEX inbox_by_principal ON inbox (principal, seq);
CREATE INDEX inbox_pending ON inbox (principal, seq) WHERE pending;

-- Events waiting for the next fire of a cron or scheduled subscription. seq
-- orders a subscription's events; it is drawn under the owner's lock too.
CREATE SEQUENCE buffer_seq;

CREATE TABLE buffer (
    subscription_id text NOT NULL,
    seq             bigint NOT NULL,
    event_id        text NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (subscription_id, seq)
);

-- Per-principal state: the cursor events_poll last handed out, how many
-- active or paused subscriptions the principal has (kept by the triggers
-- below), and the highest inbox sequence number retention removed. Its row
-- is the lock every inbox append of the principal takes.
CREATE TABLE principals (
    principal          text PRIMARY KEY,
    poll_cursor        bigint NOT NULL DEFAULT 0,
    live_subscriptions integer NOT NULL DEFAULT 0,
    pruned_through     bigint NOT NULL DEFAULT 0
);

-- How many times a subscription stopped being active (paused, expired,
-- deleted). It starts at 1: a caller that knows nothing passes 0 and always
-- gets the check.
CREATE TABLE changes (
    id            integer PRIMARY KEY CHECK (id = 1),
    deactivations bigint NOT NULL
);
INSERT INTO changes (id, deactivations) VALUES (1, 1);

-- Handler runs not yet done: one per delivery (inbox entry) of a subscription
-- with a handler that is on, written by the trigger below in the transaction
-- that records the delivery.
CREATE TABLE handler_jobs (
    id              bigserial PRIMARY KEY,
    subscription_id text NOT NULL,
    principal       text NOT NULL,
    inbox_seq       bigint NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    due_at          timestamptz NOT NULL,
    created_at      timestamptz NOT NULL
);

CREATE INDEX handler_jobs_principal_due ON handler_jobs (principal, due_at, id);
CREATE INDEX handler_jobs_by_subscription ON handler_jobs (subscription_id);
CREATE INDEX handler_jobs_by_inbox ON handler_jobs (inbox_seq);
CREATE INDEX subscriptions_with_handler ON subscriptions (id)
    WHERE handler IS NOT NULL AND handler_disabled IS NULL;

CREATE FUNCTION subscriptions_live_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO principals (principal, live_subscriptions) VALUES (NEW.principal, 1)
        ON CONFLICT (principal) DO UPDATE SET live_subscriptions = principals.live_subscriptions + 1;
    RETURN NULL;
END $$;

CREATE TRIGGER subscriptions_live_insert AFTER INSERT ON subscriptions
    FOR EACH ROW WHEN (NEW.status IN ('active', 'paused'))
    EXECUTE FUNCTION subscriptions_live_insert();

CREATE FUNCTION subscriptions_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status IN ('active', 'paused') THEN
        UPDATE principals SET live_subscriptions = live_subscriptions - 1 WHERE principal = OLD.principal;
    END IF;
    IF OLD.status = 'active' THEN
        UPDATE changes SET deactivations = deactivations + 1 WHERE id = 1;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER subscriptions_deleted AFTER DELETE ON subscriptions
    FOR EACH ROW WHEN (OLD.status IN ('active', 'paused'))
    EXECUTE FUNCTION subscriptions_deleted();

CREATE FUNCTION subscriptions_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (OLD.status IN ('active', 'paused')) <> (NEW.status IN ('active', 'paused')) THEN
        UPDATE principals
            SET live_subscriptions = live_subscriptions + (CASE WHEN NEW.status = 'expired' THEN -1 ELSE 1 END)
            WHERE principal = NEW.principal;
    END IF;
    IF OLD.status = 'active' AND NEW.status <> 'active' THEN
        UPDATE changes SET deactivations = deactivations + 1 WHERE id = 1;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER subscriptions_status AFTER UPDATE OF status ON subscriptions
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION subscriptions_status();

-- A deleted subscription's jobs go with it.
CREATE FUNCTION subscriptions_jobs_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM handler_jobs WHERE subscription_id IN (SELECT id FROM gone);
    RETURN NULL;
END $$;

CREATE TRIGGER subscriptions_jobs_delete AFTER DELETE ON subscriptions
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION subscriptions_jobs_delete();

-- Every delivery of a subscription with a handler that is on becomes a job,
-- once per INSERT statement however many rows it writes.
CREATE FUNCTION inbox_handler_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM subscriptions WHERE handler IS NOT NULL AND handler_disabled IS NULL) THEN
        INSERT INTO handler_jobs (subscription_id, principal, inbox_seq, due_at, created_at)
            SELECT s.id, s.principal, n.seq, n.created_at, n.created_at
            FROM added n CROSS JOIN LATERAL unnest(n.subscription_ids) WITH ORDINALITY AS j(id, ord)
            JOIN subscriptions s ON s.id = j.id
            WHERE n.kind IN ('event', 'batch') AND s.handler IS NOT NULL AND s.handler_disabled IS NULL
            ORDER BY n.seq, j.ord;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER inbox_handler_jobs AFTER INSERT ON inbox
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION inbox_handler_jobs();
