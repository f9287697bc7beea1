// An agent's own client: drives toolgate (in code or direct mode) with the official TypeScript SDK client, declares
// elicitation, and answers every question toolgate puts to it with ANSWER_JSON (as an agent that approves its own
// requests would). Makes the given calls in order, then prints {"results": [...], "asked": [params]} as one
// JSON line on stdout.
// Usage: node ts_agent_elicits.mjs TOOLGATE CONFIG MODE ANSWER_JSON STEPS_JSON   (MODE: code or direct)
//   (STEPS_JSON: [{"name": ..., "arguments": {...}}, ...])
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [, , toolgate, config, mode, answerJson, stepsJson] = process.argv;
const transport = new StdioClientTransport({
  command: toolgate,
  args: ["serve", "--config", config, "--mode", mode],
  stderr: "inherit",
});
const client = new Client(
  { name: "interop-ts-agent", version: "1.0.0" },
  { capabilities: { elicitation: {} } },
);
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params);
  return JSON.parse(answerJson);
});
await client.connect(transport);

const results = [];
for (const step of JSON.parse(stepsJson)) {
  try {
    results.push({ result: await client.callTool(step, undefined, { timeout: 120000 }) });
  } catch (e) {
    results.push({ threw: String(e) });
  }
}
await client.close();
console.log(JSON.stringify({ results, asked }));
