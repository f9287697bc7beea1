// Makes one call that toolgate holds for a human's approval, and prints its result as JSON on stdout.
// Usage: node ts_held_call.mjs TOOLGATE CONFIG TOOL TEXT
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [, , toolgate, config, tool, text] = process.argv;
const transport = new StdioClientTransport({ command: toolgate, args: ["serve", "--config", config], stderr: "inherit" });
const client = new Client({ name: "interop-ts-approval", version: "1.0.0" });
await client.connect(transport);
const progress = [];
const result = await client.callTool({ name: tool, arguments: { text } }, undefined, {
  onprogress: (p) => progress.push(p),
  timeout: 120000,
});
await client.close();
console.log(JSON.stringify({ result, progress }));
