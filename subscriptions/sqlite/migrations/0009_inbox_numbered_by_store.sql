-- Inbox entries are numbered by the store instead of by AUTOINCREMENT, which
-- rewrites its counter (a page of sqlite_sequence) on every insert: one WAL
-- frame of the five or so that a publish commits. The next number is one
-- past the highest of the entries there and of any deleted since
-- (changes.inbox_deleted_through, kept by the trigger below), so no number
-- is given twice and no cursor ever points past a reused one.
ALTER TABLE changes ADD COLUMN inbox_deleted_through INTEGER NOT NULL DEFAULT 0;
-- It starts at the last number AUTOINCREMENT gave, whether or not that
-- entry is still there.
UPDATE changes SET inbox_deleted_through = coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'inbox'), 0);

CREATE TABLE inbox_numbered (
    seq              INTEGER PRIMARY KEY,
    principal        TEXT NOT NULL,
    subscription_ids TEXT NOT NULL,
    kind             TEXT NOT NULL,
    event_id         TEXT,
    event_ids        TEXT,
    remaining        INTEGER NOT NULL DEFAULT 0,
    pending          INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL
) STRICT;

INSERT INTO inbox_numbered (seq, principal, subscription_ids, kind, event_id, event_ids, remaining, pending, created_at)
    SELECT seq, principal, subscription_ids, kind, event_id, event_ids, remaining, pending, created_at FROM inbox;

-- Dropping the table drops its indexes and its trigger with it.
DROP TABLE inbox;
ALTER TABLE inbox_numbered RENAME TO inbox;

CREATE INDEX inbox_by_principal ON inbox (principal, seq);
CREATE INDEX inbox_pending ON inbox (principal, seq) WHERE pending = 1;

CREATE TRIGGER inbox_handler_jobs AFTER INSERT ON inbox
WHEN NEW.kind IN ('event', 'batch')
    AND EXISTS (SELECT 1 FROM subscriptions WHERE handler IS NOT NULL AND handler_disabled IS NULL)
BEGIN
    INSERT INTO handler_jobs (subscription_id, principal, inbox_seq, due_at, created_at)
        SELECT s.id, s.principal, NEW.seq, NEW.created_at, NEW.created_at
        FROM json_each(NEW.subscription_ids) j JOIN subscriptions s ON s.id = j.value
        WHERE s.handler IS NOT NULL AND s.handler_disabled IS NULL;
END;

-- An entry numbered at or below one deleted is refused: that is what an
-- mcpe-server from before this migration would write beside a newer one
-- on this file once the newest entries were deleted (it lets SQLite number
-- its entries, and its digests it numbers from sqlite_sequence, which no
-- longer counts the inbox).
CREATE TRIGGER inbox_numbered_past_deleted AFTER INSERT ON inbox
WHEN NEW.seq <= (SELECT inbox_deleted_through FROM changes WHERE id = 1)
BEGIN
    SELECT RAISE(ABORT, 'inbox entry numbered at or below a deleted one: every mcpe-server sharing this database must run the same version');
END;

-- Whatever deletes entries (retention, a principal deleted), the highest
-- number deleted is kept.
CREATE TRIGGER inbox_deleted AFTER DELETE ON inbox
WHEN OLD.seq > (SELECT inbox_deleted_through FROM changes WHERE id = 1)
BEGIN
    UPDATE changes SET inbox_deleted_through = OLD.seq WHERE id = 1;
END;
