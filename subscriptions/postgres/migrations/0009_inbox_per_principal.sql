-- Each principal's inbox is numbered on its own, by a counter on its row
-- of principals, instead of by the one counter in changes (migration 0002)
-- that every commit of every process took turns on. Order is what a
-- principal's sessions and cursors need, and the row is already what every
-- inbox append of the principal holds, so publishes to other principals no
-- longer wait. The counters start where the one counter is, so every cursor
-- handed out stays valid; changes.inbox_seq is from now on where a new
-- principal's row starts: at least where any deleted principal's ended, so
-- no number a client saw is given again under the same name.
ALTER TABLE principals ADD COLUMN inbox_seq bigint NOT NULL DEFAULT 0;
UPDATE principals SET inbox_seq = (SELECT inbox_seq FROM changes WHERE id = 1);

CREATE FUNCTION principals_inbox_start() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.inbox_seq := greatest(NEW.inbox_seq, (SELECT inbox_seq FROM changes WHERE id = 1));
    RETURN NEW;
END $$;

CREATE TRIGGER principals_inbox_start BEFORE INSERT ON principals
    FOR EACH ROW EXECUTE FUNCTION principals_inbox_start();

CREATE FUNCTION principals_inbox_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE changes SET inbox_seq = greatest(inbox_seq, (SELECT max(inbox_seq) FROM gone)) WHERE id = 1;
    RETURN NULL;
END $$;

CREATE TRIGGER principals_inbox_end AFTER DELETE ON principals
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION principals_inbox_end();

-- Numbers repeat across principals: the key is the pair, which also serves
-- every read by principal and position (the index that did goes).
ALTER TABLE inbox DROP CONSTRAINT inbox_pkey;
ALTER TABLE inbox ADD PRIMARY KEY (principal, seq);
DROP INDEX inbox_by_principal;
DROP INDEX handler_jobs_by_inbox;
CREATE INDEX handler_jobs_by_inbox ON handler_jobs (principal, inbox_seq);
