// Measures N events_subscribe calls in a row through the official
// TypeScript MCP client over stdio, against the binary given as the first
// argument, and prints one JSON line: {"client":"typescript","calls":N,
// "seconds":...,"serverCPUMicrosPerCall":...,"clientCPUMicrosPerCall":...}
// (CPU of the server process, from /proc on Linux, and of this client).
// Usage: node subscribe.mjs /path/to/mcpe-server [N]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const bin = process.argv[2];
const calls = Number(process.argv[3] ?? 10000);
if (!bin) {
  console.error("usage: node subscribe.mjs BINARY [CALLS]");
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "mcpe-ts-"));
const cfg = join(dir, "config.yaml");
writeFileSync(cfg, `subscriptions:\n  maxPerPrincipal: ${calls + 100}\n`);
const transport = new StdioClientTransport({
  command: bin,
  args: ["--stdio", "--db", join(dir, "mcpe.db"), "--config", cfg],
  stderr: "ignore",
});
const client = new Client({ name: "mcpe-bench-ts", version: "1" });
await client.connect(transport);

// cpuSeconds is the user and system CPU time of process pid, from
// /proc/PID/stat (USER_HZ 100), or NaN where it cannot be read.
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}
const server0 = cpuSeconds(transport.pid);
const client0 = process.cpuUsage();
const start = performance.now();
for (let i = 0; i < calls; i++) {
  const g = i % 100;
  const type = Math.floor(i / 100) % 2 === 0 ? `svc${g}.*` : `svc${g}.created`;
  const res = await client.callTool({ name: "events_subscribe", arguments: { filter: { eventTypes: [type] } } });
  if (res.isError) {
    throw new Error(`call ${i}: ${JSON.stringify(res.content)}`);
  }
}
const seconds = (performance.now() - start) / 1000;
const serverCPU = cpuSeconds(transport.pid) - server0;
const clientUsage = process.cpuUsage(client0);
await client.close();
rmSync(dir, { recursive: true, force: true });
const perCall = (sec) => Math.round((sec * 1e6) / calls);
console.log(
  JSON.stringify({
    client: "typescript",
    transport: "stdio",
    calls,
    seconds,
    serverCPUMicrosPerCall: Number.isNaN(serverCPU) ? undefined : perCall(serverCPU),
    clientCPUMicrosPerCall: perCall((clientUsage.user + clientUsage.system) / 1e6),
  }),
);
