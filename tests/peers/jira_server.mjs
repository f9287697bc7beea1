// A small issue-tracker MCP server on the official TypeScript SDK, shaped like the Jira server toolscript-mcp's
// README programs call: `search_issues({jql})` answers `{issues: [{key, fields: {summary, updated}}]}`. Two of its
// four issues were last updated 30 days ago, two today, so a program that keeps the stale ones has one right answer.
// Usage: node jira_server.mjs
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const day = 24 * 3600 * 1000;
const at = (daysAgo) => new Date(Date.now() - daysAgo * day).toISOString();
const issues = [
  { key: "OPS-1", fields: { summary: "Rotate the signing key", updated: at(30), description: "x".repeat(2000) } },
  { key: "OPS-2", fields: { summary: "Fix the flaky deploy", updated: at(0), description: "y".repeat(2000) } },
  { key: "OPS-3", fields: { summary: "Document the runbook", updated: at(30), description: "z".repeat(2000) } },
  { key: "OPS-4", fields: { summary: "Upgrade the database", updated: at(1), description: "w".repeat(2000) } },
];

const server = new McpServer({ name: "jira", version: "1.0.0" });
server.registerTool(
  "search_issues",
  {
    description: "Search issues with JQL",
    inputSchema: { jql: z.string() },
    outputSchema: { issues: z.array(z.any()) },
  },
  async ({ jql }) => {
    const result = { issues, jql };
    return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
  },
);
await server.connect(new StdioServerTransport());
