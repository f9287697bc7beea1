// Lists every tool through toolgate with the official TypeScript SDK client (so the client knows each tool's
// outputSchema and validates results against it), then makes each call and prints, per call, the result or the
// error the client threw, as one JSON line on stdout.
// Usage: node ts_calls.mjs TOOLGATE CONFIG CALLS_JSON   (CALLS_JSON: [{"name": ..., "arguments": {...}}, ...])
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [, , toolgate, config, callsJson] = process.argv;
const transport = new StdioClientTransport({ command: toolgate, args: ["serve", "--config", config], stderr: "inherit" });
const client = new Client({ name: "interop-ts-calls", version: "1.0.0" });
await client.connect(transport);
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  cursor = page.nextCursor;
} while (cursor);
const out = [];
for (const call of JSON.parse(callsJson)) {
  try {
    out.push({ result: await client.callTool(call, undefined, { timeout: 60000 }) });
  } catch (e) {
    out.push({ threw: String(e) });
  }
}
await client.close();
console.log(JSON.stringify(out));
