"""A dual-era server on the official Python SDK 2.x (`MCPServer`), answering both `initialize` and
`server/discover`, with the tools, resources, template and prompts the official conformance suite's server
scenarios call by name. A legacy caller is asked mid-call (sampling, elicitation) with server-to-client requests
tied to the call; a 2026-07-28 caller gets `input_required` results instead.

Usage: python conformance_server.py stdio
       python conformance_server.py http PORT     (Streamable HTTP on 127.0.0.1:PORT/mcp)
       python conformance_server.py sse PORT      (the 2024-11-05 HTTP+SSE transport on 127.0.0.1:PORT/sse)
"""

import asyncio
import json
import sys

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import (
    AudioContent,
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    ListRootsRequest,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
WAV = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="

mcp = MCPServer("conformance-python")

MODERN = "2026-07-28"


def text(s: str) -> TextContent:
    return TextContent(type="text", text=s)


def result(*blocks) -> CallToolResult:
    return CallToolResult(content=list(blocks))


@mcp.tool()
def test_simple_text() -> CallToolResult:
    """Returns one text block."""
    return result(text("This is a simple text response for testing."))


@mcp.tool()
def test_image_content() -> CallToolResult:
    """Returns a PNG image."""
    return result(ImageContent(type="image", data=PNG, mime_type="image/png"))


@mcp.tool()
def test_audio_content() -> CallToolResult:
    """Returns a WAV clip."""
    return result(AudioContent(type="audio", data=WAV, mime_type="audio/wav"))


def embedded(uri: str, mime: str, body: str) -> EmbeddedResource:
    return EmbeddedResource(type="resource", resource=TextResourceContents(uri=uri, mime_type=mime, text=body))


@mcp.tool()
def test_embedded_resource() -> CallToolResult:
    """Returns an embedded text resource."""
    return result(embedded("test://embedded-resource", "text/plain", "This is an embedded resource content."))


@mcp.tool()
def test_multiple_content_types() -> CallToolResult:
    """Returns text, an image and an embedded resource."""
    return result(
        text("Multiple content types test:"),
        ImageContent(type="image", data=PNG, mime_type="image/png"),
        embedded("test://mixed-content-resource", "application/json", json.dumps({"test": "data", "value": 123})),
    )


@mcp.tool()
async def test_tool_with_logging(ctx: Context) -> CallToolResult:
    """Sends three log messages while it runs."""
    for i, message in enumerate(["Tool execution started", "Tool processing data", "Tool execution completed"]):
        if i:
            await asyncio.sleep(0.05)
        await ctx.log("info", message, logger_name="conformance")
    return result(text("Tool with logging executed successfully"))


@mcp.tool()
async def test_tool_with_progress(ctx: Context) -> CallToolResult:
    """Reports progress 0, 50 and 100 of 100."""
    for i, progress in enumerate([0, 50, 100]):
        if i:
            await asyncio.sleep(0.05)
        await ctx.report_progress(progress, 100)
    return result(text("Tool with progress executed successfully"))


@mcp.tool()
def test_error_handling() -> CallToolResult:
    """Always returns a tool error."""
    return CallToolResult(is_error=True, content=[text("This tool intentionally returns an error for testing")])


@mcp.tool()
async def test_sampling(prompt: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks the client to sample a reply to `prompt` (a request tied to this call, or an input_required round)."""
    messages = [SamplingMessage(role="user", content=text(prompt))]
    if ctx.protocol_version == MODERN:
        got = ask(ctx, "sample", CreateMessageRequest(params=CreateMessageRequestParams(messages=messages, max_tokens=100)))
        if isinstance(got, InputRequiredResult):
            return got
        return result(text(f"LLM response: {answered(got, 'content/text')}"))
    answer = await ctx.session.create_message(messages=messages, max_tokens=100, related_request_id=ctx.request_id)
    said = answer.content.text if isinstance(answer.content, TextContent) else ""
    return result(text(f"LLM response: {said}"))


async def elicit_form(ctx: Context, message: str, schema: dict) -> str | InputRequiredResult:
    """The user's answer as JSON text: asked with a request tied to this call, or by an input_required round."""
    if ctx.protocol_version == MODERN:
        params = ElicitRequestFormParams(message=message, requested_schema=schema)
        got = ask(ctx, "form", ElicitRequest(params=params))
        if isinstance(got, InputRequiredResult):
            return got
        return json.dumps(got.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(got, "model_dump") else got)
    answer = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return json.dumps(answer.model_dump(mode="json", by_alias=True, exclude_none=True))


async def elicited(ctx: Context, label: str, message: str, schema: dict) -> CallToolResult | InputRequiredResult:
    got = await elicit_form(ctx, message, schema)
    if isinstance(got, InputRequiredResult):
        return got
    return result(text(f"{label}: {got}"))


@mcp.tool()
async def test_elicitation(message: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks the client's user for a username and an email address."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    return await elicited(ctx, "User response", message, schema)


@mcp.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Elicits a form whose every primitive field has a default."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    }
    return await elicited(ctx, "Elicitation answer", "Please review your details", schema)


@mcp.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Elicits a form with each kind of enum field."""

    def titled(pairs):
        return [{"const": c, "title": t} for c, t in pairs]

    options = ["option1", "option2", "option3"]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": options},
            "titledSingle": {
                "type": "string",
                "oneOf": titled([("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")]),
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": titled([("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")])
                },
            },
        },
    }
    return await elicited(ctx, "Elicitation answer", "Please choose", schema)


def ask(ctx: Context, key: str, request) -> object | InputRequiredResult:
    """The answer to `key` when the retry carries it, else the round that asks for it (2026-07-28)."""
    answers = ctx.input_responses or {}
    if key in answers:
        return answers[key]
    return InputRequiredResult(input_requests={key: request})


async def asked(ctx: Context, key: str, request) -> object | InputRequiredResult:
    """`ask` for a 2026-07-28 caller; a legacy caller is asked the same with a request of its own, tied to this
    call where the SDK lets it be (roots/list names no call)."""
    if ctx.protocol_version == MODERN:
        return ask(ctx, key, request)
    if isinstance(request, ElicitRequest):
        p = request.params
        return await ctx.session.elicit_form(p.message, p.requested_schema, related_request_id=ctx.request_id)
    if isinstance(request, CreateMessageRequest):
        p = request.params
        return await ctx.session.create_message(
            messages=p.messages, max_tokens=p.max_tokens, related_request_id=ctx.request_id
        )
    return await ctx.session.list_roots()


def answered(value, pointer: str) -> str:
    data = value.model_dump(mode="json", by_alias=True) if hasattr(value, "model_dump") else value
    for part in pointer.split("/"):
        data = data.get(part, {}) if isinstance(data, dict) else {}
    return data if isinstance(data, str) else json.dumps(data)


@mcp.tool()
async def test_input_required_result_elicitation(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks the caller's user for a name (an input_required round, or a request of its own in the legacy era)."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    params = ElicitRequestFormParams(message="What is your name?", requested_schema=schema)
    got = await asked(ctx, "user_name", ElicitRequest(params=params))
    if isinstance(got, InputRequiredResult):
        return got
    return result(text(f"Hello, {answered(got, 'content/name')}!"))


@mcp.tool()
async def test_input_required_result_sampling(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks the caller to sample (an input_required round, or a request of its own in the legacy era)."""
    params = CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=text("What is the capital of France?"))], max_tokens=100
    )
    got = await asked(ctx, "capital_question", CreateMessageRequest(params=params))
    if isinstance(got, InputRequiredResult):
        return got
    return result(text(f"The model said: {answered(got, 'content/text')}"))


@mcp.tool()
async def test_input_required_result_list_roots(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks the caller for its roots (an input_required round, or a request of its own in the legacy era)."""
    got = await asked(ctx, "client_roots", ListRootsRequest())
    if isinstance(got, InputRequiredResult):
        return got
    return result(text(f"Roots: {answered(got, 'roots')}"))


@mcp.tool()
async def test_logging_tool(ctx: Context) -> CallToolResult:
    """Logs once; the SDK delivers it only to a caller that asked for logs."""
    await ctx.log("info", "logging tool ran", logger_name="conformance")
    return result(text("Logging tool ran"))


@mcp.tool()
async def test_streaming_elicitation(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks mid-call whether to continue: a request tied to this call, or an input_required round."""
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    return await elicited(ctx, "Answer", "Continue?", schema)


@mcp.tool()
async def test_touch_watched(ctx: Context) -> CallToolResult:
    """Announces that test://watched-resource changed, to whoever subscribed to it in the caller's era."""
    if ctx.protocol_version == MODERN:
        await ctx.notify_resource_updated("test://watched-resource")
    else:
        await ctx.session.send_resource_updated("test://watched-resource")
    return result(text("touched"))


@mcp.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A fixed text resource."""
    return "This is the content of the static text resource."


@mcp.resource("test://static-binary", name="static-binary", mime_type="application/octet-stream")
def static_binary() -> bytes:
    """A fixed binary resource."""
    return bytes(range(16))


@mcp.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched() -> str:
    """A resource clients may subscribe to."""
    return "Watched."


@mcp.resource("test://template/{id}/data", name="template-data", mime_type="application/json")
def template_data(id: str) -> str:
    """JSON data for any id."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@mcp.prompt()
def test_simple_prompt() -> str:
    """A prompt with no arguments."""
    return "This is a simple prompt for testing."


@mcp.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt that quotes its two arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@mcp.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list:
    """A prompt that embeds a resource."""
    return [
        {"role": "user", "content": embedded(resourceUri, "text/plain", "Embedded resource content for testing.")},
        {"role": "user", "content": text("Please process the embedded resource above.")},
    ]


@mcp.prompt()
def test_prompt_with_image() -> list:
    """A prompt that carries an image."""
    return [
        {"role": "user", "content": ImageContent(type="image", data=PNG, mime_type="image/png")},
        {"role": "user", "content": text("Please analyze the image above.")},
    ]


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        mcp.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif sys.argv[1:2] == ["sse"]:
        mcp.run(transport="sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run()
