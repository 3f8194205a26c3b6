-- Several servers (replicas) share this database. What they need of it:
--
-- The store's identity, made once, the same for every process.
CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
INSERT INTO meta (key, value) VALUES ('store_id', replace(gen_random_uuid()::text, '-', ''));

-- Inbox entries and subscription changes are numbered in commit order
-- across all processes, since each process follows the others with one
-- watermark per kind (subscriptions.Shared.Heads: once it returned n, no
-- entry or change numbered n or less commits later). A sequence does not
-- give that: two transactions draw 5 and 6, the one with 6 commits first,
-- and a reader that saw 6 passes 5 for good. So the numbers are drawn from
-- counters in the one row of changes, by an UPDATE that adds to them: the
-- row stays locked by the drawing transaction until it commits or rolls
-- back, and the next one to draw waits for that and adds to what was
-- committed. Numbers are then drawn and committed in one order, and the
-- row's committed values are the heads (a rolled-back draw is undone, and
-- its numbers, never seen by anyone, are drawn again). Every transaction
-- that draws takes its principals' rows first, so the wait for the counter
-- row is the last lock taken, and is held from the draw to the commit only.
ALTER TABLE changes ADD COLUMN inbox_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE changes ADD COLUMN change_seq bigint NOT NULL DEFAULT 0;
-- The newest subscription change retention removed: a process that had
-- seen less than it must reload every subscription.
ALTER TABLE changes ADD COLUMN changes_pruned_through bigint NOT NULL DEFAULT 0;
UPDATE changes SET inbox_seq = greatest(
    (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM inbox_seq),
    (SELECT coalesce(max(seq), 0) FROM inbox),
    (SELECT coalesce(max(pruned_through), 0) FROM principals)) WHERE id = 1;
DROP SEQUENCE inbox_seq;

-- Every change to what routes events (a subscription created, deleted, or
-- its status, filter or delivery changed), in order, so that each process
-- brings its routing index up to date by reading what followed the last
-- change it saw. Rows name the subscription only; its state is read from
-- subscriptions. changed_at (the database's clock) lets retention drop old
-- rows.
CREATE TABLE subscription_changes (
    seq             bigint PRIMARY KEY,
    subscription_id text NOT NULL,
    changed_at      timestamptz NOT NULL
);

CREATE INDEX subscription_changes_by_time ON subscription_changes (changed_at);

CREATE FUNCTION subscriptions_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    UPDATE changes SET change_seq = change_seq + 1 WHERE id = 1 RETURNING change_seq INTO n;
    IF TG_OP = 'DELETE' THEN
        INSERT INTO subscription_changes (seq, subscription_id, changed_at) VALUES (n, OLD.id, now());
    ELSE
        INSERT INTO subscription_changes (seq, subscription_id, changed_at) VALUES (n, NEW.id, now());
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER subscriptions_changes_insert AFTER INSERT ON subscriptions
    FOR EACH ROW EXECUTE FUNCTION subscriptions_changed();

CREATE TRIGGER subscriptions_changes_delete AFTER DELETE ON subscriptions
    FOR EACH ROW EXECUTE FUNCTION subscriptions_changed();

CREATE TRIGGER subscriptions_changes_update AFTER UPDATE OF status, filter, delivery ON subscriptions
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.filter IS DISTINCT FROM NEW.filter
        OR OLD.delivery IS DISTINCT FROM NEW.delivery)
    EXECUTE FUNCTION subscriptions_changed();
