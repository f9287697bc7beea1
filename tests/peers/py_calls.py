"""Lists every tool through toolgate with the official Python SDK client (so it knows each tool's outputSchema
and validates results against it), then makes each call and prints, per call, the result or the error the client
raised, as one JSON line on stdout.

Usage: python py_calls.py TOOLGATE CONFIG CALLS_JSON   (CALLS_JSON: [{"name": ..., "arguments": {...}}, ...])
"""

import json
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main(toolgate: str, config: str, calls_json: str) -> None:
    params = StdioServerParameters(command=toolgate, args=["serve", "--config", config])
    out: list = []
    async with Client(params) as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            cursor = page.next_cursor
            if not cursor:
                break
        for call in json.loads(calls_json):
            try:
                result = await client.call_tool(call["name"], call["arguments"])
                out.append({"result": result.model_dump(mode="json", by_alias=True, exclude_none=True)})
            except Exception as e:  # noqa: BLE001 - what the client raised is the finding
                out.append({"threw": f"{type(e).__name__}: {e}"})
    print(json.dumps(out))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
