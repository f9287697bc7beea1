// Drives toolgate in code mode with the official TypeScript SDK client: lists the tools, then makes the given
// calls in order. A step `{"resume": true}` resumes the previous call's Contract V1 handle: it prints
// {"held": REQUEST_ID} as one line, waits for one line on stdin (sent once a human approved the request), then
// calls toolgate_resume. At the end it prints {"tools": [...], "results": [...]} as one JSON line on stdout.
// Usage: node ts_codemode.mjs TOOLGATE CONFIG STEPS_JSON [TOOLGATE_ARGS='["--config", ...]' in the environment]   (STEPS_JSON: [{"name": ..., "arguments": {...}} | {"resume": true}, ...])
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createInterface } from "node:readline";

const [, , toolgate, config, stepsJson] = process.argv;
// TOOLGATE_ARGS (a JSON list) replaces the arguments, for toolgate started under another product's name.
const args = process.env.TOOLGATE_ARGS ? JSON.parse(process.env.TOOLGATE_ARGS) : ["serve", "--config", config, "--mode", "code"];
const transport = new StdioClientTransport({
  command: toolgate,
  args,
  stderr: "inherit",
  // Only then the whole environment (TOOLSCRIPT_CONFIG, the state directory); otherwise the SDK's default.
  env: process.env.TOOLGATE_ARGS ? { ...process.env } : undefined,
});
const client = new Client({ name: "interop-ts-codemode", version: "1.0.0" });
await client.connect(transport);

const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools.map((t) => t.name));
  cursor = page.nextCursor;
} while (cursor);

const input = createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();
const results = [];
for (const step of JSON.parse(stepsJson)) {
  try {
    if (step.resume) {
      const held = results.at(-1)?.result?.structuredContent?.approval?.request_id;
      if (!held) throw new Error(`the previous step was not held: ${JSON.stringify(results.at(-1))}`);
      console.log(JSON.stringify({ held }));
      await lines.next();
      results.push({ result: await client.callTool({ name: "toolgate_resume", arguments: { request_id: held } }, undefined, { timeout: 120000 }) });
    } else {
      results.push({ result: await client.callTool(step, undefined, { timeout: 120000 }) });
    }
  } catch (e) {
    results.push({ threw: String(e) });
  }
}
await client.close();
// An open standard input would keep the process alive after its report.
input.close();
process.stdin.destroy();
console.log(JSON.stringify({ tools, results }));
