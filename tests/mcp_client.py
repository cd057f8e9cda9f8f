"""A real MCP client session (the SDK's, over streamable HTTP) for tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import TLS


class ToolFailed(Exception):
    pass


def session(url: str, token: str | None, script: Callable[[Client], Any]) -> Any:
    """Run `await script(client)` inside one MCP session; return what it returns."""

    async def run():
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60, verify=TLS) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await script(client)

    return asyncio.run(run())


async def call(client: Client, tool: str, **arguments) -> Any:
    """Call a tool; return its JSON answer, or raise ToolFailed with the error text. A
    tool answering a list or a string (the shared-memory seed's memory_search and
    memory_add) has it in its structured content's `result`."""
    result = await client.call_tool(tool, arguments)
    text = "\n".join(part.text for part in result.content if hasattr(part, "text"))
    if result.is_error:
        raise ToolFailed(text)
    structured = result.structured_content
    if isinstance(structured, dict) and set(structured) == {"result"}:
        return structured["result"]
    return json.loads(text) if text else None
