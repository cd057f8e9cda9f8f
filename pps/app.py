"""The FastAPI application: its lifespan, the request body limit, the error handlers
(pps.http.errors), and each face registered on it, side by side: REST (`pps.rest`), the
web face (`pps.web`, /ui) and the MCP endpoints (`mcp_bridge`). It stands above the three
faces, which stand on the shared HTTP layer (`pps.http`): that layer imports none of them.

Routes stay thin: parse, call one engine service, shape the answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from engine.api import Service
from engine.kernel.config import Settings
from engine.kernel.lock import SERVE, DataDirLock
from engine.kernel.requests import INT64_MAX
from mcp_bridge.mount import mount as mcp_mount
from pps import rest, web
from pps.http.calls import RecordCalls
from pps.http.errors import BodyLimit, add_error_handlers
from pps.rest import events


def create_app(settings: Settings, lock: DataDirLock | None = None) -> FastAPI:
    """The app for one data dir. Its lifespan holds the data dir's lock (one server per
    data dir) before anything starts: `lock` is one already taken (`pps serve` takes it
    before loading the engine); without it the lifespan takes its own and lets it go at
    shutdown, so the same process can serve the data dir again."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own: DataDirLock | None = None
        if lock is not None and lock.held:
            held = lock
        else:
            own = held = DataDirLock.acquire(
                settings.data_dir, SERVE, host=settings.host, port=settings.port
            )
        app.state.local_key = held.owner.key  # see current_operator
        try:
            app.state.service = service = Service.start(settings)
            try:
                async with serving_mcp():
                    yield
            finally:
                service.stop()
        finally:
            if own is not None:
                own.release()

    app = FastAPI(
        title="pps — Pattern Persistence Service",
        version="0.1.0",
        summary="One memory for every channel of an AI entity.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.add_middleware(BodyLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(RecordCalls)  # who called (engine.capture.clients)
    add_error_handlers(app)
    rest.include(app)  # /v1 (docs/rest.md)
    web.mount(app)  # the web face, /ui (docs/ui.md)
    serving_mcp = mcp_mount(app, settings.host)
    _complete_description(app, settings)
    return app


def _complete_description(app: FastAPI, settings: Settings) -> None:
    """What FastAPI's OpenAPI description does not say by itself, added once, when it is
    first made: the body of POST /v1/events (up to the settings' batch), and bounds as
    the whole numbers they are (FastAPI writes them as floats: 2**63 - 1 would read 2**63)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        described = FastAPI.openapi(app)  # kept as app.openapi_schema: completed in place
        events.describe_body(described, settings.max_batch)
        _exact_bounds(described)
        return described

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to change it


_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _exact_bounds(node) -> None:
    if isinstance(node, list):
        for item in node:
            _exact_bounds(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in _BOUNDS and isinstance(value, float) and value.is_integer():
                node[key] = INT64_MAX if value == float(INT64_MAX) else int(value)
            else:
                _exact_bounds(value)
