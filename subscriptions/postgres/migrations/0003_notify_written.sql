-- Every transaction that appends inbox entries or subscription changes
-- notifies the channel mcpe_written once (NOTIFY folds repeats within a
-- transaction, and delivers at commit), so that the other processes on
-- this database look at once rather than at their next poll. The payload
-- is the writer's application_name, which each server sets to a name of its
-- own, so that a server can tell its own commits from the others'.
CREATE FUNCTION mcpe_notify_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('mcpe_written', coalesce(current_setting('application_name', true), ''));
    RETURN NULL;
END $$;

CREATE TRIGGER inbox_notify_written AFTER INSERT ON inbox
    FOR EACH STATEMENT EXECUTE FUNCTION mcpe_notify_written();

CREATE TRIGGER subscription_changes_notify_written AFTER INSERT ON subscription_changes
    FOR EACH STATEMENT EXECUTE FUNCTION mcpe_notify_written();
