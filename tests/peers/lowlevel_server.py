"""A server on the Python SDK 1.x low-level API, written as many are: it registers resources/list (so it declares
the resources capability) but no handler for resources/templates/list or prompts/list, which answer "method not
found".

Usage: python lowlevel_server.py   (stdio)
"""

import anyio

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

server = Server("matrix-lowlevel")


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return [
        types.Tool(
            name="echo",
            description="Echoes its text.",
            inputSchema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        )
    ]


@server.list_resources()
async def list_resources() -> list[types.Resource]:
    return []


@server.call_tool()
async def call_tool(name: str, arguments: dict) -> list[types.TextContent]:
    if name != "echo":
        raise ValueError(f"unknown tool {name}")
    return [types.TextContent(type="text", text=arguments["text"])]


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
