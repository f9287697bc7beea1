"""Drives `toolgate serve` with the official Python SDK client (2026-07-28 on stdio) against a legacy upstream
that asks mid-call: its questions must reach the client as input_required and the client's answers must reach
the upstream. Prints a JSON summary.

Usage: python py_bridge.py TOOLGATE CONFIG
"""

import json
import sys

import anyio
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters


async def main(toolgate: str, config: str) -> None:
    params = StdioServerParameters(command=toolgate, args=["serve", "--config", config])
    out: dict = {"elicited": [], "sampled": []}

    async def elicit(context, request: types.ElicitRequestParams) -> types.ElicitResult:
        out["elicited"].append(request.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    async def sample(context, request: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        out["sampled"].append(len(request.messages))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled by python"),
            model="python-test",
        )

    def dump(result) -> dict:
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    async with Client(params, elicitation_callback=elicit, sampling_callback=sample) as client:
        out["protocolVersion"] = client.protocol_version
        out["elicit"] = dump(await client.call_tool("fx__elicit", {"message": "proceed from python?"}))
        out["both"] = dump(await client.call_tool("fx__ask_both", {"message": "both from python"}))
        out["twice"] = dump(await client.call_tool("fx__ask_twice", {"message": "twice from python"}))
    print(json.dumps(out))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:3])
