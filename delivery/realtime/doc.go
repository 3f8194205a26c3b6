// Package realtime is the live notifier of mcpe-server: it turns inbox
// entries into MCPE notifications (events/event for each matching event as it
// is published, events/batch for a cron or scheduled digest, and
// events/subscription_expired) and sends them to the owner's live sessions.
//
// Channel translates entries into notifications; Registry keeps track of the
// live sessions of each principal and sends them notifications. Each session
// has its own bounded queue and writer goroutine, so a slow or vanished
// client never holds up routing or any other session: when its queue is full
// the notification is dropped for that session only. Every entry has already
// been written to the owner's inbox when it arrives here, so an owner with no
// live session (or a session too slow to keep up) reads it later with
// events_poll.
package realtime
