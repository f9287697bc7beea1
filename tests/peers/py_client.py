"""Drives `toolgate serve` with the official Python SDK client (default auto mode) and prints a JSON summary.

Usage: python py_client.py TOOLGATE CONFIG WORKSPACE
"""

import json
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main(toolgate: str, config: str, workspace: str) -> None:
    params = StdioServerParameters(command=toolgate, args=["serve", "--config", config])
    out: dict = {}
    progress: list = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append({"progress": value, "total": total, "message": message})

    async with Client(params) as client:
        out["protocolVersion"] = client.protocol_version
        out["serverInfo"] = client.server_info.model_dump(mode="json") if client.server_info else None
        tools = []
        cursor = None
        pages = 0
        while True:
            page = await client.list_tools(cursor=cursor)
            pages += 1
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        out["tools"] = [t.name for t in tools]
        out["pages"] = pages
        echo = await client.call_tool("everything__echo", {"message": "hello from python"})
        out["echo"] = echo.model_dump(mode="json", by_alias=True, exclude_none=True)
        structured = await client.call_tool("everything__get-structured-content", {"location": "Chicago"})
        out["structured"] = structured.model_dump(mode="json", by_alias=True, exclude_none=True)
        slow = await client.call_tool(
            "fixture__slow", {"steps": 3, "delay_ms": 20}, progress_callback=on_progress
        )
        out["slow"] = slow.model_dump(mode="json", by_alias=True, exclude_none=True)
        out["progress"] = progress
        # Cancel a slow call by abandoning it; the SDK sends notifications/cancelled, which must reach the upstream.
        with anyio.move_on_after(0.3):
            await client.call_tool("fixture__slow", {"steps": 50, "delay_ms": 100})
        cancelled = 0
        for _ in range(50):
            counted = await client.call_tool("fixture__cancelled", {})
            cancelled = (counted.structured_content or {}).get("cancelled", 0)
            if cancelled:
                break
            await anyio.sleep(0.05)
        out["upstreamCancelled"] = cancelled
        rich = await client.call_tool("fixture__rich", {})
        out["rich"] = rich.model_dump(mode="json", by_alias=True, exclude_none=True)
        await client.call_tool(
            "files__write_file", {"path": f"{workspace}/from-py.txt", "content": "python was here"}
        )
        read = await client.call_tool("files__read_text_file", {"path": f"{workspace}/from-py.txt"})
        out["read"] = read.model_dump(mode="json", by_alias=True, exclude_none=True)
    print(json.dumps(out))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
