-- A transaction that appends inbox entries notifies mcpe_written once per
-- principal written (NOTIFY folds repeats within a transaction), the
-- payload being the writer's application_name, a space, and the md5 of the
-- principal: a server wakes only for the principals whose sessions it
-- holds, and a server with none of them is not woken at all (it finds what
-- was written at its next poll, should a session arrive). A subscription
-- change still notifies with the writer's name alone, which every server
-- follows, as the routing index is needed everywhere.
CREATE FUNCTION mcpe_notify_inbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('mcpe_written', coalesce(current_setting('application_name', true), '') || ' ' || md5(w.principal))
    FROM (SELECT DISTINCT principal FROM written) AS w;
    RETURN NULL;
END $$;

DROP TRIGGER inbox_notify_written ON inbox;

CREATE TRIGGER inbox_notify_written AFTER INSERT ON inbox
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION mcpe_notify_inbox();
