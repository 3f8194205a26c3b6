-- A sourceEventId is an event's ID at its source (subscriptions.Publication
-- .Source: an adapter's name, 'ingest' for POST /v1/events, '' for the
-- server's own), and names a duplicate only among that source's events:
-- keyed by (type, source_event_id) alone, anyone who could post to
-- /v1/events could make an adapter's coming event a duplicate by posting
-- its ID first. The events accepted before get the source that posts their
-- types, so that their redeliveries are still refused.
ALTER TABLE events ADD COLUMN source TEXT NOT NULL DEFAULT '';

UPDATE events SET source = CASE
        WHEN type GLOB 'github.*' THEN 'github'
        WHEN type GLOB 'slack.*' THEN 'slack'
        WHEN type GLOB 'alert.*' THEN 'alertmanager'
        WHEN type GLOB 'mcp.*' THEN 'mcp'
        WHEN type = 'conversation.user_message' THEN ''
        ELSE 'ingest' END
    WHERE source_event_id IS NOT NULL;

DROP INDEX events_by_source;
CREATE UNIQUE INDEX events_by_source ON events (source, type, source_event_id)
    WHERE source_event_id IS NOT NULL;
