// Package console is the web console the binary serves at /console: per
// principal, the subscriptions (filters, delivery, schedule, state, handler
// and its last run), the live sessions, the newest inbox entries with their
// delivery state and a chart of events and notifications per minute; and
// the actions pause, resume, delete, fire a digest now and replay an event.
//
// Pages are rendered on the server with html/template, which escapes event
// data; the one script is a small file served from the binary, so the
// Content-Security-Policy allows no inline script. People log in with a
// principal's bearer token (auth.tokens), seeing only that principal, or
// with the admin token, seeing every principal. The session cookie is
// HttpOnly and SameSite=Strict (Secure over TLS), and every action carries
// the session's CSRF token.
package console
