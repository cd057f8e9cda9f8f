"""Serve each MCP profile over streamable HTTP on the FastAPI app, behind the entity token
(refused in the HTTP layer's words and shape, pps.http, as on /v1).

Profiles are the exact tool contracts of the user's seeds; each is one MCPServer:
`/mcp` (pps), and more as layers land. They run stateless with JSON responses: every
request stands alone and is authenticated on its own.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

from fastapi import FastAPI
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from starlette.routing import Route

from engine.capture import entities
from engine.kernel.errors import FieldProblem, bearer_challenge
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
        entity = entities.authenticate(scope["app"].state.db, token) if token else None
        if entity is None:
            refused = Unauthorized(UNKNOWN_TOKEN, wrong=True) if token else no_token(header)
            problems = [FieldProblem("Authorization", refused.problem)]
            challenge = {
                "WWW-Authenticate": bearer_challenge(refused.problem if refused.wrong else None)
            }
            response = problem_response(401, "unauthorized", problems, **challenge)
            return await response(scope, receive, send)
        scope.setdefault("state", {})["entity"] = entity
        await self.app(scope, receive, send)


class _NoSessionToEnd(logging.Filter):
    """The SDK logs `Terminating session: None` at the end of every stateless request
    (INFO, one line per MCP call): there was no session, so nothing is said."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Terminating session: None"


_NO_SESSION_TO_END = _NoSessionToEnd()
