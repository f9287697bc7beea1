"""Makes one request of every kind toolgate governs, through toolgate, with the official Python SDK client in the
mode given (`auto` speaks 2026-07-28, `legacy` initializes), against the dual-era server (`conformance_server.py`)
behind it: a tool call, a prompt get, a resource read, a completion, a subscription and its end (legacy only:
2026-07-28 has neither), and two calls during which the server asks the client (sampling, elicitation), which the
client answers. Prints a JSON summary: each step's outcome, and what the client was asked.

Usage: python py_table.py MODE URL
       python py_table.py MODE stdio TOOLGATE CONFIG
"""

import json
import sys

import anyio
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters


async def main(mode: str, target: str, rest: list[str]) -> None:
    server = target
    if target == "stdio":
        toolgate, config = rest
        server = StdioServerParameters(command=toolgate, args=["serve", "--config", config])
    out: dict = {"steps": {}, "sampled": 0, "elicited": 0}

    async def elicit(context, request: types.ElicitRequestParams) -> types.ElicitResult:
        out["elicited"] += 1
        return types.ElicitResult(action="accept", content={"name": "table"})

    async def sample(context, request: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        out["sampled"] += 1
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled"), model="table"
        )

    async def step(name: str, call) -> None:
        try:
            result = await call
            failed = bool(getattr(result, "is_error", False))
            out["steps"][name] = "error result" if failed else "ok"
        except Exception as e:  # noqa: BLE001 - the test reads which steps failed, and why
            out["steps"][name] = f"error: {e}"

    async with Client(server, mode=mode, elicitation_callback=elicit, sampling_callback=sample) as client:
        out["protocolVersion"] = client.protocol_version
        await step("tools/call", client.call_tool("test_simple_text", {}))
        await step("prompts/get", client.get_prompt("test_simple_prompt"))
        await step("resources/read", client.read_resource("test://static-text"))
        ref = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
        await step("completion/complete", client.complete(ref, {"name": "arg1", "value": "a"}))
        if mode == "legacy":
            await step("resources/subscribe", client.subscribe_resource("test://watched-resource"))
            await step("resources/unsubscribe", client.unsubscribe_resource("test://watched-resource"))
        await step("sampling", client.call_tool("test_sampling", {"prompt": "table"}))
        await step("elicitation", client.call_tool("test_elicitation", {"message": "table?"}))
    print(json.dumps(out))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:])
