// A client that answers what upstreams ask: drives toolgate with the official TypeScript SDK client (its
// default protocol revision, over stdio or Streamable HTTP), declares sampling and elicitation, answers every
// sampling request with SAMPLED and every elicitation with the content ANSWER_JSON, each after DELAY_MS, makes
// the given calls concurrently, then prints {"results": [...], "sampled": [params], "elicited": [params]} as one
// JSON line on stdout.
// Usage: node ts_answers.mjs TOOLGATE CONFIG SAMPLED ANSWER_JSON CALLS_JSON DELAY_MS   (stdio: serve CONFIG)
//        node ts_answers.mjs URL - SAMPLED ANSWER_JSON CALLS_JSON DELAY_MS              (toolgate's HTTP front)
//   (CALLS_JSON: [{"name": ..., "arguments": {...}}, ...])
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [, , target, config, sampledText, answerJson, callsJson, delayMs] = process.argv;
const transport = target.startsWith("http")
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args: ["serve", "--config", config], stderr: "inherit" });
const later = () => new Promise((done) => setTimeout(done, Number(delayMs || 0)));
const client = new Client(
  { name: "interop-ts-answers", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: {} } },
);
const sampled = [];
const elicited = [];
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  sampled.push(request.params);
  await later();
  return { role: "assistant", model: "interop", content: { type: "text", text: sampledText } };
});
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicited.push(request.params);
  await later();
  return { action: "accept", content: JSON.parse(answerJson) };
});
await client.connect(transport);
const results = await Promise.all(
  JSON.parse(callsJson).map(async (call) => {
    try {
      return { result: await client.callTool(call, undefined, { timeout: 60000 }) };
    } catch (e) {
      return { threw: String(e) };
    }
  }),
);
await client.close();
console.log(JSON.stringify({ results, sampled, elicited }));
