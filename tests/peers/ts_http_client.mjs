// Drives `toolgate serve --http` with the official TypeScript SDK client over Streamable HTTP and prints a JSON
// summary on stdout.
// Usage: node ts_http_client.mjs URL
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [, , url] = process.argv;
const transport = new StreamableHTTPClientTransport(new URL(url));
const client = new Client({ name: "interop-ts-http", version: "1.0.0" });
await client.connect(transport);

const out = {
  serverInfo: client.getServerVersion(),
  protocolVersion: transport.protocolVersion,
  sessionId: transport.sessionId,
};

const tools = [];
let cursor;
let pages = 0;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  pages += 1;
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);
out.tools = tools.map((t) => t.name);
out.pages = pages;

out.echo = await client.callTool({ name: "everything__echo", arguments: { message: "hello over http" } });
out.fixtureEcho = await client.callTool({ name: "fixture__echo", arguments: { text: "fixture over http" } });

// A progress-reporting tool: its notifications arrive on the POST's SSE response before the result.
const progress = [];
out.longRunning = await client.callTool(
  { name: "everything__trigger-long-running-operation", arguments: { duration: 1, steps: 3 } },
  undefined,
  { onprogress: (p) => progress.push(p) },
);
out.progress = progress;

// Cancel a slow fixture call after its first progress notification.
const controller = new AbortController();
try {
  await client.callTool(
    { name: "fixture__slow", arguments: { steps: 50, delay_ms: 100 } },
    undefined,
    { signal: controller.signal, onprogress: () => controller.abort("the test cancels") },
  );
  out.cancelled = false;
} catch (e) {
  out.cancelled = true;
}
out.upstreamCancelled = 0;
for (let i = 0; i < 50 && !out.upstreamCancelled; i++) {
  const counted = await client.callTool({ name: "fixture__cancelled", arguments: {} });
  out.upstreamCancelled = counted.structuredContent?.cancelled ?? 0;
  if (!out.upstreamCancelled) await new Promise((r) => setTimeout(r, 50));
}
out.afterCancel = await client.callTool({ name: "fixture__echo", arguments: { text: "still alive" } });

// Ending the session: a later request on it is refused, as the SDK expects (404).
await transport.terminateSession();
out.terminatedSessionId = transport.sessionId ?? null;
await client.close();
const stale = await fetch(url, {
  method: "POST",
  headers: {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-session-id": out.sessionId,
  },
  body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
});
out.afterDeleteStatus = stale.status;
console.log(JSON.stringify(out));
