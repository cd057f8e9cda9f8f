"""The record of who called, kept for every answered request of an entity (on /v1, /mcp
and /ui alike): which client, the route, read or write, the status and how long it took.
The request's entity is the one its route authenticated (pps.http.deps, the web face's
session, mcp_bridge's BearerEntity put it in the request's state); a request no entity
made (a 401, /health) is not recorded. The call is handed to the service
(`service.record_call`), whose recorder writes it later, from its own thread.

A client is named, first, by the X-PPS-Client header it sends (our own clients do:
engine.kernel.labels); then an MCP client by the clientInfo name of its `initialize`;
then by the route: Claude Code's http hook, a web session, plain REST.
"""

from __future__ import annotations

import time

from engine.capture.clients import Call
from engine.kernel.labels import CLIENT_HEADER, clean_label

_HEADER = CLIENT_HEADER.lower().encode()
_READ_POSTS = ("/search", "/recall", "/explore", "/draw")
"""POSTs that only read (a query in a body)."""
_ROUTES = {"/v1/hooks/claude-code": "claude-code-http"}
_POLLED = "/ui/api/"
"""What the open pages poll every few seconds: not recorded, or a page left open would
fill the log of recent calls with its polls."""


class RecordCalls:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        state = scope.setdefault("state", {})
        status = 500
        started = time.perf_counter()

        async def sending(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            entity = _entity(state)
            polled = scope["method"] == "GET" and scope.get("path", "").startswith(_POLLED)
            if entity is not None and not polled:
                record(scope, state, entity, status, (time.perf_counter() - started) * 1000)


def _entity(state: dict) -> str | None:
    entity = state.get("entity")
    if entity is None and (session := state.get("ui_session")) is not None:
        entity = session.entity
    return entity


def record(scope, state: dict, entity: str, status: int, latency_ms: float) -> None:
    service = getattr(scope["app"].state, "service", None)
    if service is None:  # the lifespan has not started the service yet
        return
    path, method = scope.get("path", ""), scope["method"]
    route = getattr(scope.get("route"), "path", None) or path
    label = clean_label(dict(scope["headers"]).get(_HEADER, b"").decode("latin-1"))
    kind = "read" if method in ("GET", "HEAD") or path.endswith(_READ_POSTS) else "write"
    if "mcp_method" in state:  # an MCP request: its JSON-RPC method, a tool's own kind
        route = f"{route} {state['mcp_method']}"
        if state.get("mcp_tool"):
            route += f" {state['mcp_tool']}"
        kind = state.get("mcp_kind", "read")
        if state.get("mcp_client"):  # the stdio relay: its label, with its host's name
            label = f"{label or 'mcp'}: {state['mcp_client']}"
        label = label or "mcp"
    elif path.startswith("/ui"):
        label = label or "web"
    label = label or _ROUTES.get(route, "rest")
    service.record_call(Call(entity, label, method, route, kind, status, round(latency_ms, 2)))
