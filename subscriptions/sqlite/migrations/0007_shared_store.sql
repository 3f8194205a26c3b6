-- Several processes may share this database. What they need of it:
--
-- The store's identity, so that a second server can tell whether the one
-- holding its HTTP port serves the same store.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
INSERT INTO meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))));

-- Every change to what routes events (a subscription created, deleted, or
-- its status, filter or delivery changed), in order, so that each process
-- brings its routing index up to date by reading what followed the last
-- change it saw. Rows name the subscription only; its state is read from
-- subscriptions. changed_at (Unix milliseconds, SQLite's clock) lets
-- retention drop old rows.
CREATE TABLE subscription_changes (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    subscription_id TEXT NOT NULL,
    changed_at      INTEGER NOT NULL
) STRICT;

CREATE TRIGGER subscriptions_changes_insert AFTER INSERT ON subscriptions
BEGIN
    INSERT INTO subscription_changes (subscription_id, changed_at)
        VALUES (NEW.id, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;

CREATE TRIGGER subscriptions_changes_delete AFTER DELETE ON subscriptions
BEGIN
    INSERT INTO subscription_changes (subscription_id, changed_at)
        VALUES (OLD.id, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;

CREATE TRIGGER subscriptions_changes_update AFTER UPDATE OF status, filter, delivery ON subscriptions
WHEN OLD.status IS NOT NEW.status OR OLD.filter IS NOT NEW.filter OR OLD.delivery IS NOT NEW.delivery
BEGIN
    INSERT INTO subscription_changes (subscription_id, changed_at)
        VALUES (NEW.id, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;

-- The number of the last event added to a buffer: buffers are numbered in
-- commit order by whichever process commits, so the counter lives here.
ALTER TABLE changes ADD COLUMN buffer_seq INTEGER NOT NULL DEFAULT 0;
UPDATE changes SET buffer_seq = (SELECT coalesce(max(seq), 0) FROM buffer) WHERE id = 1;

-- The newest subscription change retention removed: a process that had
-- seen less than it must reload every subscription.
ALTER TABLE changes ADD COLUMN changes_pruned_through INTEGER NOT NULL DEFAULT 0;
