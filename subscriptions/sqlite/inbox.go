package sqlite

// inboxHead is the highest inbox number given out: the newest entry's, or
// that of one deleted since if higher (migration 0009). Only a transaction
// that holds the write lock may number entries from it.
const inboxHead = `max(coalesce((SELECT max(seq) FROM inbox), 0), (SELECT inbox_deleted_through FROM changes WHERE id = 1))`

// bodiesQuery reads the bodies of a JSON array of event IDs.
const bodiesQuery = `SELECT id, body FROM events WHERE id IN (SELECT value FROM json_each($1))`
