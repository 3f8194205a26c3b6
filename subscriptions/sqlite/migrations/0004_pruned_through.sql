-- The highest inbox sequence number retention removed for each principal,
-- so that a live session catching up from the inbox can tell that entries
-- it was owed are gone, and say where to poll from.
ALTER TABLE principals ADD COLUMN pruned_through INTEGER NOT NULL DEFAULT 0;
