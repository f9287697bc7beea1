"""Drives `toolgate serve --http` with the official Python SDK client over Streamable HTTP, in the mode given
(`auto` discovers the 2026-07-28 era, `legacy` initializes), and prints a JSON summary.

Usage: python py_http_client.py URL MODE
"""

import json
import sys

import anyio
from mcp import Client


async def main(url: str, mode: str) -> None:
    out: dict = {}
    progress: list = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append({"progress": value, "total": total, "message": message})

    async with Client(url, mode=mode) as client:
        out["protocolVersion"] = client.protocol_version
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
        echo = await client.call_tool("everything__echo", {"message": "hello from python over http"})
        out["echo"] = echo.model_dump(mode="json", by_alias=True, exclude_none=True)
        slow = await client.call_tool("fixture__slow", {"steps": 3, "delay_ms": 20}, progress_callback=on_progress)
        out["slow"] = slow.model_dump(mode="json", by_alias=True, exclude_none=True)
        out["progress"] = progress
        rich = await client.call_tool("fixture__rich", {})
        out["rich"] = rich.model_dump(mode="json", by_alias=True, exclude_none=True)
    print(json.dumps(out))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
