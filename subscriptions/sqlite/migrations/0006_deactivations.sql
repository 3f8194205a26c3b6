-- How many times a subscription stopped being active (paused, expired,
-- deleted), so that a publish whose routing already reflects every such
-- change does not look up its targets' status again. It starts at 1: a
-- caller that knows nothing passes 0 and always gets the check.
CREATE TABLE changes (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    deactivations INTEGER NOT NULL
) STRICT;
INSERT INTO changes (id, deactivations) VALUES (1, 1);

CREATE TRIGGER subscriptions_deactivated AFTER UPDATE OF status ON subscriptions
WHEN OLD.status = 'active' AND NEW.status <> 'active'
BEGIN
    UPDATE changes SET deactivations = deactivations + 1 WHERE id = 1;
END;

CREATE TRIGGER subscriptions_active_deleted AFTER DELETE ON subscriptions
WHEN OLD.status = 'active'
BEGIN
    UPDATE changes SET deactivations = deactivations + 1 WHERE id = 1;
END;
