// Drives `toolgate serve` with the official TypeScript SDK client and prints a JSON summary on stdout.
// Usage: node ts_client.mjs TOOLGATE CONFIG WORKSPACE
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [, , toolgate, config, workspace] = process.argv;
const transport = new StdioClientTransport({
  command: toolgate,
  args: ["serve", "--config", config],
  stderr: "inherit",
});
const client = new Client({ name: "interop-ts", version: "1.0.0" });
await client.connect(transport);

const out = { serverInfo: client.getServerVersion(), capabilities: client.getServerCapabilities() };

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
out.echoDefinition = tools.find((t) => t.name === "everything__echo");

out.echo = await client.callTool({ name: "everything__echo", arguments: { message: "hello from ts" } });
out.structured = await client.callTool({
  name: "everything__get-structured-content",
  arguments: { location: "Chicago" },
});

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
  out.cancelError = String(e);
}
// The abandoned call must be cancelled upstream too: the fixture counts the cancellations it received.
out.upstreamCancelled = 0;
for (let i = 0; i < 50 && !out.upstreamCancelled; i++) {
  const counted = await client.callTool({ name: "fixture__cancelled", arguments: {} });
  out.upstreamCancelled = counted.structuredContent?.cancelled ?? 0;
  if (!out.upstreamCancelled) await new Promise((r) => setTimeout(r, 50));
}
out.afterCancel = await client.callTool({ name: "fixture__echo", arguments: { text: "still alive" } });

await client.callTool({
  name: "files__write_file",
  arguments: { path: `${workspace}/from-ts.txt`, content: "written through toolgate" },
});
out.read = await client.callTool({ name: "files__read_text_file", arguments: { path: `${workspace}/from-ts.txt` } });

await client.close();
console.log(JSON.stringify(out));
