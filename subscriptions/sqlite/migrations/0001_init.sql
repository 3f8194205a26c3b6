-- Subscriptions. Times are Unix nanoseconds, UTC. A subscription's delivery
-- count is delivered_base plus the 'event' entries in the inbox that list it,
-- and its last delivery the later of last_delivered_base and those entries:
-- publishing writes only inbox rows, and retention folds the entries it
-- deletes into the base columns.
CREATE TABLE subscriptions (
    id                  TEXT PRIMARY KEY,
    principal           TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('active', 'paused', 'expired')),
    filter              TEXT NOT NULL,
    delivery            TEXT NOT NULL,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    expires_at          INTEGER,
    expired_at          INTEGER,
    delivered_base      INTEGER NOT NULL DEFAULT 0,
    last_delivered_base INTEGER,
    -- The cron or scheduled channel's next and last fire.
    next_fire_at        INTEGER,
    last_fire_at        INTEGER,
    -- The handler (JSON, NULL for none), its signing secrets, why it was
    -- turned off, and what it did.
    handler             TEXT,
    handler_secrets     TEXT,
    handler_disabled    TEXT,
    handler_succeeded   INTEGER NOT NULL DEFAULT 0,
    handler_failed      INTEGER NOT NULL DEFAULT 0,
    handler_last_run_at INTEGER,
    handler_last_error  TEXT,
    handler_last_output TEXT,
    handler_last_tools  TEXT
) STRICT;

CREATE INDEX subscriptions_by_principal ON subscriptions (principal, created_at);
CREATE INDEX subscriptions_by_expiry ON subscriptions (expires_at)
    WHERE status IN ('active', 'paused') AND expires_at IS NOT NULL;

-- Accepted events, keyed by ID in a single B-tree. The unique index on
-- (type, source_event_id) refuses redeliveries while the row is kept (the
-- dedup window). Retention scans received_at once a minute, which costs less
-- than an index written with every event.
CREATE TABLE events (
    id              TEXT PRIMARY KEY,
    type            TEXT NOT NULL,
    source_event_id TEXT,
    body            TEXT NOT NULL,
    received_at     INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE UNIQUE INDEX events_by_source ON events (type, source_event_id)
    WHERE source_event_id IS NOT NULL;

-- What was delivered to each principal, in order: one row per principal and
-- event, with the JSON array of the subscriptions it matched, or one row per
-- digest (kind 'batch', the JSON array of its event IDs in event_ids, with
-- how many were still waiting). Bodies stay once in events, however many
-- digests carry them. pending marks digests fired while the owner had no live session,
-- to send when it connects. AUTOINCREMENT keeps sequence numbers (the cursors
-- of events_poll) from ever being reused. The only secondary indexes are the
-- ones reads need: every other index would be one more B-tree write per
-- delivery.
CREATE TABLE inbox (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    principal        TEXT NOT NULL,
    subscription_ids TEXT NOT NULL,
    kind             TEXT NOT NULL,
    event_id         TEXT,
    event_ids        TEXT,
    remaining        INTEGER NOT NULL DEFAULT 0,
    pending          INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL
) STRICT;

CREATE INDEX inbox_by_principal ON inbox (principal, seq);
CREATE INDEX inbox_pending ON inbox (principal, seq) WHERE pending = 1;

-- Events waiting for the next fire of a cron or scheduled subscription, in
-- one B-tree keyed by subscription: a fire reads a key range and deletes by
-- key. seq orders a subscription's events (the store numbers them in commit
-- order).
CREATE TABLE buffer (
    subscription_id TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    event_id        TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (subscription_id, seq)
) STRICT, WITHOUT ROWID;

-- Per-principal state: the cursor events_poll last handed out, and how many
-- active or paused subscriptions the principal has (kept by the triggers
-- below, so the limit check reads one row instead of counting).
CREATE TABLE principals (
    principal          TEXT PRIMARY KEY,
    poll_cursor        INTEGER NOT NULL DEFAULT 0,
    live_subscriptions INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TRIGGER subscriptions_live_insert AFTER INSERT ON subscriptions
WHEN NEW.status IN ('active', 'paused')
BEGIN
    INSERT INTO principals (principal, live_subscriptions) VALUES (NEW.principal, 1)
        ON CONFLICT (principal) DO UPDATE SET live_subscriptions = live_subscriptions + 1;
END;

CREATE TRIGGER subscriptions_live_delete AFTER DELETE ON subscriptions
WHEN OLD.status IN ('active', 'paused')
BEGIN
    UPDATE principals SET live_subscriptions = live_subscriptions - 1 WHERE principal = OLD.principal;
END;

CREATE TRIGGER subscriptions_live_status AFTER UPDATE OF status ON subscriptions
WHEN (OLD.status IN ('active', 'paused')) <> (NEW.status IN ('active', 'paused'))
BEGIN
    UPDATE principals
        SET live_subscriptions = live_subscriptions + (CASE WHEN NEW.status = 'expired' THEN -1 ELSE 1 END)
        WHERE principal = NEW.principal;
END;

-- Handler runs not yet done: one per delivery (inbox entry) of a subscription
-- with a handler, written by the trigger below in the transaction that
-- records the delivery, so a run is never lost between the two. A job keeps
-- its inbox entry from retention; it goes when it succeeds, fails for good,
-- or its subscription or handler goes.
CREATE TABLE handler_jobs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    subscription_id TEXT NOT NULL,
    inbox_seq       INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    due_at          INTEGER NOT NULL,
    created_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX handler_jobs_due ON handler_jobs (due_at, id);
CREATE INDEX handler_jobs_by_subscription ON handler_jobs (subscription_id);

-- Subscriptions with a handler that is on: while there is none, the trigger
-- below costs one probe of this index per delivery.
CREATE INDEX subscriptions_with_handler ON subscriptions (id)
    WHERE handler IS NOT NULL AND handler_disabled IS NULL;

CREATE TRIGGER inbox_handler_jobs AFTER INSERT ON inbox
WHEN NEW.kind IN ('event', 'batch')
    AND EXISTS (SELECT 1 FROM subscriptions WHERE handler IS NOT NULL AND handler_disabled IS NULL)
BEGIN
    INSERT INTO handler_jobs (subscription_id, inbox_seq, due_at, created_at)
        SELECT s.id, NEW.seq, NEW.created_at, NEW.created_at
        FROM json_each(NEW.subscription_ids) j JOIN subscriptions s ON s.id = j.value
        WHERE s.handler IS NOT NULL AND s.handler_disabled IS NULL;
END;

CREATE TRIGGER subscriptions_jobs_delete AFTER DELETE ON subscriptions
BEGIN
    DELETE FROM handler_jobs WHERE subscription_id = OLD.id;
END;
