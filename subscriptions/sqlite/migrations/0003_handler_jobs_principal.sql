-- The principal of each handler job (its subscription's, which never
-- changes), so that the runner takes due jobs principal by principal through
-- an index, however long one principal's backlog is.
ALTER TABLE handler_jobs ADD COLUMN principal TEXT NOT NULL DEFAULT '';

UPDATE handler_jobs SET principal = coalesce(
    (SELECT principal FROM subscriptions WHERE id = handler_jobs.subscription_id), '');

CREATE INDEX handler_jobs_principal_due ON handler_jobs (principal, due_at, id);

DROP TRIGGER inbox_handler_jobs;

CREATE TRIGGER inbox_handler_jobs AFTER INSERT ON inbox
WHEN NEW.kind IN ('event', 'batch')
    AND EXISTS (SELECT 1 FROM subscriptions WHERE handler IS NOT NULL AND handler_disabled IS NULL)
BEGIN
    INSERT INTO handler_jobs (subscription_id, principal, inbox_seq, due_at, created_at)
        SELECT s.id, s.principal, NEW.seq, NEW.created_at, NEW.created_at
        FROM json_each(NEW.subscription_ids) j JOIN subscriptions s ON s.id = j.value
        WHERE s.handler IS NOT NULL AND s.handler_disabled IS NULL;
END;
