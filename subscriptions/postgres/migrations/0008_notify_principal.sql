-- A transaction that appends inbox entries notifies once per principal
-- written (NOTIFY folds repeats within a transaction), on the channel
-- mcpe_inbox_<first byte of the md5 of the principal, in hex>, the payload
-- being the writer's application_name, a space, and that md5: a server
-- listens to the channels of the principals whose sessions it holds and
-- wakes for those principals only; a server with none of them is not told
-- at all (it finds what was written at its next look, should a session
-- arrive). A subscription change still notifies mcpe_written with the
-- writer's name alone, which every server listens to, as the routing index
-- is needed everywhere.
CREATE FUNCTION mcpe_notify_inbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('mcpe_inbox_' || left(w.h, 2), coalesce(current_setting('application_name', true), '') || ' ' || w.h)
    FROM (SELECT DISTINCT md5(principal) FROM written) AS w(h);
    RETURN NULL;
END $$;

DROP TRIGGER inbox_notify_written ON inbox;

CREATE TRIGGER inbox_notify_written AFTER INSERT ON inbox
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION mcpe_notify_inbox();
