// ToolHub's generic client state machine, driven by the official TypeScript SDK client against `mcp-toolhub serve`
// (TOOLHUB_WORKSPACE_ROOT and TOOLHUB_STATE_ROOT come from this process's environment):
//   1. toolhub.capabilities, and select the operation TOOL from its approval_operations;
//   2. call TOOL with ARGS_JSON and inspect its structured outcome;
//   3. on APPROVAL_REQUIRED, keep the approval handle (printed as {"step": 3, "approval": ...});
//   4. poll toolhub.request_status while it reports APPROVAL_PENDING (a human decides meanwhile, out of band);
//   5. on APPROVAL_APPROVED, call approval.resume_tool with only the request_id;
//   6. inspect the resumed outcome; then (as a check, not as a client should) resume once more.
// Each step prints one JSON line on stdout; the client never approves anything itself.
// Usage: node ts_toolhub.mjs MCP_TOOLHUB TOOL ARGS_JSON
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [, , command, tool, argsJson] = process.argv;
const env = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  TOOLHUB_WORKSPACE_ROOT: process.env.TOOLHUB_WORKSPACE_ROOT,
};
if (process.env.TOOLHUB_STATE_ROOT) env.TOOLHUB_STATE_ROOT = process.env.TOOLHUB_STATE_ROOT;
const transport = new StdioClientTransport({ command, args: ["serve"], env, stderr: "inherit" });
const client = new Client({ name: "toolhub-state-machine", version: "1.0.0" });
await client.connect(transport);
const say = (line) => console.log(JSON.stringify(line));
const call = async (name, args) => (await client.callTool({ name, arguments: args }, undefined, { timeout: 60000 })).structuredContent;

const capabilities = await call("toolhub.capabilities", {});
const operation = capabilities.approval_operations.find((o) => o.initial_tool === tool);
say({ step: 1, contract_version: capabilities.contract_version, operation });
if (!operation) throw new Error(`${tool} is not a supported Contract V1 operation`);

const first = await call(operation.initial_tool, JSON.parse(argsJson));
say({ step: 2, outcome: first.outcome, trace_id: first.trace_id });
if (first.outcome !== "APPROVAL_REQUIRED") throw new Error(`expected APPROVAL_REQUIRED, got ${first.outcome}`);
const handle = first.approval;
say({ step: 3, approval: handle, trace_id: first.trace_id });

let status;
let polls = 0;
const deadline = Date.now() + 60000;
do {
  status = await call("toolhub.request_status", { request_id: handle.request_id });
  polls += 1;
  if (status.outcome === "APPROVAL_PENDING") await new Promise((done) => setTimeout(done, 100));
} while (status.outcome === "APPROVAL_PENDING" && Date.now() < deadline);
say({ step: 4, polls, status });
if (status.outcome !== "APPROVAL_APPROVED") throw new Error(`expected APPROVAL_APPROVED, got ${status.outcome}`);

const resumed = await call(status.approval.resume_tool, { request_id: handle.request_id });
say({ step: 5, resume_tool: status.approval.resume_tool, result: resumed });
const replay = await call(status.approval.resume_tool, { request_id: handle.request_id });
say({ step: 6, outcome: resumed.outcome, replay });
await client.close();
