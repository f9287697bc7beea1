"""A tiny FastMCP server (the decorator API of the Python SDK 1.x), as most Python MCP servers are written: tools
whose schemas FastMCP derives from type hints, one with a structured (outputSchema) result.

Usage: python fastmcp_server.py   (stdio)
"""

from pydantic import BaseModel

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("matrix-fastmcp")


class Sum(BaseModel):
    total: int


@mcp.tool()
def add(a: int, b: int) -> Sum:
    """Adds two integers."""
    return Sum(total=a + b)


@mcp.tool()
def shout(text: str) -> str:
    """Returns the text in capitals."""
    return text.upper()


if __name__ == "__main__":
    mcp.run()
