"""Serve each MCP profile over streamable HTTP on the FastAPI app, behind the entity token
(refused in the HTTP layer's words and shape, pps.http, as on /v1).

Profiles are the exact tool contracts of the user's seeds; each is one MCPServer:
`/mcp` (pps), and more as layers land. They run stateless with JSON responses: every
request stands alone and is authenticated on its own.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

from fastapi import FastAPI
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from starlette.routing import Route

from engine.kernel.errors import FieldProblem, bearer_challenge
from engine.kernel.labels import clean_label
from mcp_bridge import PATHS, openclaw, pps, shared_memory, wordwalker
from pps.http.deps import UNKNOWN_TOKEN, Unauthorized, no_token
from pps.http.errors import problem_response

PROFILES: dict[str, tuple[str, Callable[[], MCPServer]]] = {
    "pps": (PATHS["pps"], pps.build),
    "wordwalker": (PATHS["wordwalker"], wordwalker.build),
    "openclaw": (PATHS["openclaw"], openclaw.build),
    "shared-memory": (PATHS["shared-memory"], shared_memory.build),
}


def mount(app: FastAPI, host: str) -> Callable[[], AbstractAsyncContextManager[None]]:
    """Add a route per profile; return the lifespan that runs their session managers."""
    # The same filter object: added once however many apps are made in one process.
    logging.getLogger("mcp.server.streamable_http").addFilter(_NO_SESSION_TO_END)
    servers = []
    for name, (path, build) in PROFILES.items():
        server = build()
        server.streamable_http_app(stateless_http=True, json_response=True, host=host)
        endpoint = BearerEntity(StreamableHTTPASGIApp(server.session_manager))
        app.router.routes.append(Route(path, endpoint, methods=["GET", "POST", "DELETE"]))
        if name == "shared-memory":  # one shared store of the caller's, by its name
            store_path = path + "/{store}"
            app.router.routes.append(Route(store_path, endpoint, methods=["GET", "POST", "DELETE"]))
        servers.append(server)

    @asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for server in servers:
                await stack.enter_async_context(server.session_manager.run())
            yield

    return running


class BearerEntity:
    """Let a request through only with a valid entity token, and record whose it is.

    The header is read as Starlette reads every header (latin-1, which any bytes are), so
    bytes that are not UTF-8 are a wrong token, a 401, as on /v1. A 401 challenges as
    RFC 6750 says: `Bearer` alone when no bearer token came, with
    `error="invalid_token"` when one came and is no entity's, or came empty (as /v1:
    pps.http.deps.no_token)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        headers = dict(scope["headers"])
        header = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, token = header.partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else ""
        service = scope["app"].state.service
        entity = service.entities.authenticate(token) if token else None
        if entity is None:
            refused = Unauthorized(UNKNOWN_TOKEN, wrong=True) if token else no_token(header)
            problems = [FieldProblem("Authorization", refused.problem)]
            challenge = {
                "WWW-Authenticate": bearer_challenge(refused.problem if refused.wrong else None)
            }
            response = problem_response(401, "unauthorized", problems, **challenge)
            return await response(scope, receive, send)
        state = scope.setdefault("state", {})
        state["entity"] = entity
        if scope["method"] == "POST":
            receive = await _note_call(state, headers, receive)
        await self.app(scope, receive, send)


READ_TOOLS = {
    fn.__name__
    for module in (pps, wordwalker, openclaw, shared_memory)
    for fn, marks in module.profile.tools
    if marks.read_only_hint
}
_NAMES_KEPT = 256
_client_names: dict[tuple[str, bytes], str] = {}
"""The clientInfo name each (entity, User-Agent) gave in its last `initialize`: MCP here
is stateless, so a tool call does not say it again."""


async def _note_call(state: dict, headers: dict, receive):
    """Put in the request's state what the record of calls shows of an MCP message (its
    JSON-RPC method, the tool called and whether it only reads, the client's name), and
    return a `receive` that gives the body read for it again."""
    chunks, more = [], True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    body = b"".join(chunks)
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # the SDK answers what it cannot read
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("method"), str):
        given = parsed.get("params")
        params: dict = given if isinstance(given, dict) else {}
        key = (state["entity"], headers.get(b"user-agent", b""))
        state["mcp_method"] = method = parsed["method"][:64]
        if method == "initialize":
            info = params.get("clientInfo")
            name = info.get("name") if isinstance(info, dict) else None
            if isinstance(name, str) and (name := clean_label(name)):
                if len(_client_names) >= _NAMES_KEPT:
                    _client_names.pop(next(iter(_client_names)))
                _client_names[key] = name
        if method == "tools/call" and isinstance(params.get("name"), str):
            state["mcp_tool"] = params["name"][:64]
            state["mcp_kind"] = "read" if params["name"] in READ_TOOLS else "write"
        if key in _client_names:
            state["mcp_client"] = _client_names[key]
    sent = False

    async def replay():
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class _NoSessionToEnd(logging.Filter):
    """The SDK logs `Terminating session: None` at the end of every stateless request
    (INFO, one line per MCP call): there was no session, so nothing is said."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Terminating session: None"


_NO_SESSION_TO_END = _NoSessionToEnd()
