-- The servers running on this database, each marked every little while
-- (subscriptions.Runs): the principals of a server's sessions without a
-- token are named after its run, and a run whose mark lapsed ended without
-- deleting what they own, so a live server deletes it. marked_at is Unix
-- nanoseconds of the marking server's clock.
CREATE TABLE runs (
    run       TEXT PRIMARY KEY,
    marked_at INTEGER NOT NULL
) STRICT;
