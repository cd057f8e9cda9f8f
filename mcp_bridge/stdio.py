"""`pps mcp --profile NAME`: an MCP server on stdio for clients that spawn a command.

It holds no memory logic and opens no database: every list and call is forwarded to the
running service's profile over streamable HTTP, with the entity's token. The profiles
are stateless, so each forward opens its own connection; if the service is down, a call
fails as a tool error that says so, and the next call tries again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import mcp.types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def bridge(url: str, token: str, name: str) -> Server:
    @asynccontextmanager
    async def upstream() -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            yield client

    async def list_tools(ctx, params) -> types.ListToolsResult:
        async with upstream() as client:
            return await client.list_tools()

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            async with upstream() as client:
                return await client.call_tool(params.name, params.arguments or {})
        except Exception as exc:  # the service being unreachable is the agent's news
            message = f"the pps service at {url} did not answer: {type(exc).__name__}: {exc}"
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=message)], is_error=True
            )

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(url: str, token: str, name: str) -> None:
    server = bridge(url, token, name)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
