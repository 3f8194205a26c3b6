// Package mcpe is the wire vocabulary of MCP Events (MCPE): the event, the
// subscription as the events_* tools show it, the filter and its pattern
// language, the delivery and handler settings, the tool arguments and
// results, and the notifications with their method names. It imports only
// the standard library, so that a client (package client) can speak MCPE
// without compiling the server; the server's domain (package subscriptions)
// builds on these types and adds what only the server knows.
//
// The checks that need nothing but the text of a value live here too
// (ValidateType, ValidateTags, ParsePattern, ParseCursor), and so does the
// strict JSON decoder of tool arguments and posted events (DecodeStrict):
// the server, its configuration and its clients refuse a bad value with the
// same words.
package mcpe
