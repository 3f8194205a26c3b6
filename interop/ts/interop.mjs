// Drives the SEP-3415 events extension of mcpe-server with the official
// TypeScript MCP client over stdio: events/list (every page), events/poll
// (subscribe with a null cursor, then read two published events) and
// events/stream (active, two events, a heartbeat, then abort). The custom
// methods go through client.request with zod schemas; the stream's
// notifications/events/* arrive through fallbackNotificationHandler.
// Prints one JSON line with what it saw and exits 0, or prints the failure
// and exits 1. Usage: node interop.mjs /path/to/mcpe-server
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { z } from "zod";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const bin = process.argv[2];
if (!bin) {
  console.error("usage: node interop.mjs BINARY");
  process.exit(2);
}
const wait = 10000;
const dir = mkdtempSync(join(tmpdir(), "mcpe-interop-ts-"));
const cfg = join(dir, "config.yaml");
writeFileSync(cfg, "subscriptions:\n  heartbeatInterval: 200ms\n");

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

// within rejects when p does not settle within ms.
function within(p, ms, what) {
  let timer;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
    }),
  ]);
}

const transport = new StdioClientTransport({
  command: bin,
  args: ["--stdio", "--http", "127.0.0.1:0", "--db", join(dir, "mcpe.db"), "--config", cfg],
  stderr: "pipe",
});
// The server logs its HTTP address (for publishing events) on stderr.
const httpAddr = new Promise((resolve) => {
  let buf = "";
  transport.stderr.on("data", (chunk) => {
    buf += chunk.toString();
    const m = buf.match(/msg="HTTP server listening" addr=(\S+)/);
    if (m) resolve(m[1]);
  });
});

async function publish(type) {
  const base = await within(httpAddr, wait, "HTTP address on stderr");
  const res = await fetch(`http://${base}/v1/events`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ type, data: { from: "typescript" } }),
  });
  const body = await res.json();
  check(res.status === 202, `POST /v1/events: ${res.status} ${JSON.stringify(body)}`);
  return body.id;
}

// Notifications of the push stream, and the waiters for them.
const notes = [];
let onNote = () => {};
function nextNote(pred, what) {
  return within(
    new Promise((resolve) => {
      const look = () => {
        const i = notes.findIndex(pred);
        if (i >= 0) {
          resolve(notes.splice(i, 1)[0]);
          return true;
        }
        return false;
      };
      if (!look()) {
        const prev = onNote;
        onNote = () => {
          if (look()) onNote = prev;
          else prev();
        };
      }
    }),
    wait,
    what,
  );
}

const client = new Client({ name: "mcpe-interop-ts", version: "1" });
client.fallbackNotificationHandler = async (n) => {
  if (n.method.startsWith("notifications/events/")) {
    notes.push(n);
    onNote();
  }
};

const EventType = z.looseObject({ name: z.string(), delivery: z.array(z.string()), inputSchema: z.object({}).loose() });
const ListResult = z.looseObject({ events: z.array(EventType), nextCursor: z.string().optional() });
const Occurrence = z.looseObject({ eventId: z.string(), name: z.string(), timestamp: z.string(), data: z.unknown() });
const PollResult = z.looseObject({
  events: z.array(Occurrence),
  cursor: z.string(),
  truncated: z.boolean(),
  hasMore: z.boolean(),
  nextPollMs: z.number(),
});
const StreamResult = z.looseObject({});
const args = { eventTypes: ["ts.*"] };
const summary = { client: "typescript" };

try {
  await client.connect(transport);
  summary.server = client.getServerVersion()?.name ?? null;
  const caps = client.getServerCapabilities() ?? {};
  summary.extension = Boolean(caps.extensions?.["io.modelcontextprotocol/events"] ?? caps.experimental?.["io.modelcontextprotocol/events"]);
  check(summary.extension, `the server does not declare io.modelcontextprotocol/events: ${JSON.stringify(caps)}`);

  // events/list, every page.
  const types = [];
  let cursor;
  do {
    const page = await client.request({ method: "events/list", params: cursor ? { cursor } : {} }, ListResult);
    types.push(...page.events);
    cursor = page.nextCursor;
  } while (cursor);
  check(types[0]?.name === "mcpe.filter", `events/list: first type is ${types[0]?.name}, want mcpe.filter`);
  summary.types = types.length;

  // events/poll: a null cursor subscribes, then the events come.
  const first = await client.request({ method: "events/poll", params: { name: "mcpe.filter", arguments: args } }, PollResult);
  check(first.events.length === 0 && first.cursor, `first poll: ${JSON.stringify(first)}`);
  const polledIds = [await publish("ts.poll"), await publish("ts.poll")];
  const polled = await client.request(
    { method: "events/poll", params: { name: "mcpe.filter", arguments: args, cursor: first.cursor } },
    PollResult,
  );
  check(
    JSON.stringify(polled.events.map((e) => e.eventId)) === JSON.stringify(polledIds),
    `poll: got ${JSON.stringify(polled.events.map((e) => e.eventId))}, want ${JSON.stringify(polledIds)}`,
  );
  check(polled.cursor !== first.cursor && !polled.truncated, `poll: cursor did not move or truncated: ${JSON.stringify(polled)}`);
  summary.polled = polled.events.length;

  // events/stream: active, the events, a heartbeat; then abort.
  const abort = new AbortController();
  const stream = client
    .request({ method: "events/stream", params: { name: "mcpe.filter", arguments: { eventTypes: ["ts.stream"] } } }, StreamResult, {
      signal: abort.signal,
      timeout: 10 * wait,
    })
    .then(
      () => "result",
      (err) => (abort.signal.aborted ? "aborted" : Promise.reject(err)),
    );
  const active = await nextNote((n) => n.method === "notifications/events/active", "notifications/events/active");
  const subId = active.params?._meta?.["io.modelcontextprotocol/subscriptionId"];
  check(subId !== undefined && typeof active.params.cursor === "string", `active: ${JSON.stringify(active)}`);
  const streamedIds = [await publish("ts.stream"), await publish("ts.stream")];
  const got = [];
  for (let i = 0; i < streamedIds.length; i++) {
    const ev = await nextNote((n) => n.method === "notifications/events/event", "notifications/events/event");
    check(ev.params._meta?.["io.modelcontextprotocol/subscriptionId"] === subId, `event of another stream: ${JSON.stringify(ev)}`);
    check(typeof ev.params.cursor === "string", `event without a cursor: ${JSON.stringify(ev)}`);
    got.push(ev.params.eventId);
  }
  check(JSON.stringify(got) === JSON.stringify(streamedIds), `stream: got ${JSON.stringify(got)}, want ${JSON.stringify(streamedIds)}`);
  const beat = await nextNote((n) => n.method === "notifications/events/heartbeat", "notifications/events/heartbeat");
  check(typeof beat.params.cursor === "string", `heartbeat: ${JSON.stringify(beat)}`);
  abort.abort();
  summary.streamEnd = await within(stream, wait, "end of the aborted stream");
  summary.streamed = got.length;

  // The session is still usable after the stream, and the poll
  // subscription (ts.*) collected the stream's events too.
  const again = await client.request({ method: "events/poll", params: { name: "mcpe.filter", arguments: args, cursor: polled.cursor } }, PollResult);
  check(
    JSON.stringify(again.events.map((e) => e.eventId)) === JSON.stringify(streamedIds),
    `poll after the stream: got ${JSON.stringify(again.events.map((e) => e.eventId))}, want ${JSON.stringify(streamedIds)}`,
  );
  summary.ok = true;
  console.log(JSON.stringify(summary));
} catch (err) {
  console.log(JSON.stringify({ ...summary, ok: false, error: String(err?.stack ?? err) }));
  process.exitCode = 1;
} finally {
  await client.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}
