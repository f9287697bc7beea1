// Drives toolgate's WebSocket entry point (`toolgate serve --http`, ws://ADDR/mcp/ws) with the official TypeScript
// SDK client over its WebSocketClientTransport (subprotocol `mcp`, Node's own WebSocket), and prints a JSON summary
// on stdout: the server, the tools listed, and the result of one call.
// Usage: node ts_ws_client.mjs URL TOOL ARGUMENTS_JSON
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { WebSocketClientTransport } from "@modelcontextprotocol/sdk/client/websocket.js";

const [, , url, tool, args] = process.argv;
const transport = new WebSocketClientTransport(new URL(url));
const client = new Client({ name: "interop-ts-ws", version: "1.0.0" });
await client.connect(transport);

const out = { serverInfo: client.getServerVersion() };
const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools.map((t) => t.name));
  cursor = page.nextCursor;
} while (cursor);
out.tools = tools;
out.call = await client.callTool({ name: tool, arguments: JSON.parse(args) });
await client.close();
console.log(JSON.stringify(out));
