// Package agent runs the "agent" handler of subscriptions: for each
// delivery (an event, or a digest batch) it asks an LLM to handle the event,
// as the subscription's systemPrompt and instructions say, and lets it call
// the tools of this server that the subscription names.
//
// # Where the model runs
//
// A run goes, in this order of preference, to:
//
//  1. MCP sampling (sampling/createMessage) on a live session of the
//     subscription's owner whose client declared the sampling capability
//     (and sampling.tools, when the handler names tools), on a protocol
//     version before 2026-07-28, which forbids sampling requests started by
//     the server. The owner's own client, and its user, see the request and
//     choose the model; handler.model is passed as a model hint.
//  2. The operator's OpenAI-compatible chat-completions endpoint
//     (Options.Endpoint), when one is configured. It always uses the
//     operator's model (Endpoint.Model); handler.model does not override it.
//
// When neither exists at run time the delivery is tried again after 1m, 5m
// and 30m, then fails. Check refuses, at subscribe time, a handler that
// could not run now.
//
// # Trust model
//
// The subscription's owner is trusted with its own handler: systemPrompt and
// instructions are the owner's words. Event payloads are not: anyone who can
// publish an event can write them, and they may hold text written to steer
// the model ("ignore previous instructions..."). So:
//
//   - The system prompt is a fixed Preamble, then handler.systemPrompt. It
//     never holds event data. The Preamble tells the model that the event
//     data is in the user message between <event_data> and </event_data>,
//     and is data to analyse, never instructions to follow; tool results
//     likewise.
//   - The user message holds handler.instructions, then the payload between
//     those delimiters, as compact JSON in which <, >, &, U+2028 and U+2029
//     are escaped (\u003c...), so no payload can close the delimiter or open
//     a new block. A payload over 64 KiB, or one that is not JSON, is handed
//     on as a JSON string of its (first) bytes.
//   - The model may call only the tools handler.tools names, which Check
//     limits to this server's own tools (Options.Tools), and each call runs
//     as the subscription's owner: the model can do nothing the owner could
//     not do with their own client. A call to any other tool, or with
//     arguments that are not a JSON object, is answered with an error
//     result and not made.
//   - Each run is bounded: at most 8 model calls (the last one with tool
//     choice "none"), each asking for at most handler.maxTokens (else 1024)
//     tokens, so at most 8 × maxTokens output tokens per run; at most 32 tool
//     calls; each tool result cut to 16 KiB; 2m in all. Outcome.Output, the
//     model's final text, is cut to MaxOutputBytes.
//
// Prompt-level defences are not a guarantee: a model may still be misled by
// event data. The real limit is what the allowed tools can do as the owner;
// subscribe with tools only when the events come from sources you trust to
// that extent.
//
// # Retries
//
// A failure that may pass (the endpoint answered 408, 429 or 5xx or could not
// be reached, the owner's session closed, the run timed out) is retried after
// 30s, 2m and 10m, or the endpoint's Retry-After when later, but only when no
// tool was called in the run: a retry runs the whole conversation again, and
// tool calls are not undone. Other failures (the client refused the sampling
// request, a 4xx, an answer that cannot be read, the limit of model calls)
// fail the delivery.
package agent
