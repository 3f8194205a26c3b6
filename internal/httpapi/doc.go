// Package httpapi is the HTTP edge of mcpe-server: one mux for /mcp
// (Streamable HTTP), /v1/events (ingest), the adapters' receivers and
// /healthz, behind the protections every endpoint shares; one way of checking
// a bearer token (Tokens); and one refusal format, the JSON body
// {"error": {"code", "message"}} that ingest and the adapters answer with.
package httpapi
