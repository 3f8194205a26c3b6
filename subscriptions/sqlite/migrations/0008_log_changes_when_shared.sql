-- Subscription changes are logged only once another process has opened
-- the database (meta 'shared', set by the process that finds the database
-- open elsewhere): a server alone pays nothing for them. A process that
-- opens the database loads every subscription after setting it, so what
-- changed before is in what it loads.
INSERT INTO meta (key, value) VALUES ('shared', '0');

DROP TRIGGER subscriptions_changes_insert;
DROP TRIGGER subscriptions_changes_delete;
DROP TRIGGER subscriptions_changes_update;

CREATE TRIGGER subscriptions_changes_insert AFTER INSERT ON subscriptions
WHEN (SELECT value FROM meta WHERE key = 'shared') = '1'
BEGIN
    INSERT INTO subscription_changes (subscription_id, changed_at)
        VALUES (NEW.id, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;

CREATE TRIGGER subscriptions_changes_delete AFTER DELETE ON subscriptions
WHEN (SELECT value FROM meta WHERE key = 'shared') = '1'
BEGIN
    INSERT INTO subscription_changes (subscription_id, changed_at)
        VALUES (OLD.id, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;

CREATE TRIGGER subscriptions_changes_update AFTER UPDATE OF status, filter, delivery ON subscriptions
WHEN (OLD.status IS NOT NEW.status OR OLD.filter IS NOT NEW.filter OR OLD.delivery IS NOT NEW.delivery)
    AND (SELECT value FROM meta WHERE key = 'shared') = '1'
BEGIN
    INSERT INTO subscription_changes (subscription_id, changed_at)
        VALUES (NEW.id, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;
