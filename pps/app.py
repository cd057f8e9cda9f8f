"""The FastAPI application: lifespan, authentication, and one error shape for every face.

Routes live in `pps.rest.*` (the web face's in `pps.web`) and stay thin: parse, call
one engine service, shape the answer. Every 4xx, 502 and 503 body is
`{"error", "message", "problems": [{"field", "problem"}]}`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import iter_route_contexts
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from engine.kernel.config import Settings
from engine.kernel.errors import (
    BadUpstream,
    Conflict,
    FieldProblem,
    Forbidden,
    InputError,
    NotFound,
    Unavailable,
    bearer_challenge,
    from_validation,
)
from engine.kernel.requests import INT64_MAX
from engine.runtime import Runtime
from engine.store.db import Database
from engine.store.lock import SERVE, DataDirLock
from mcp_bridge.mount import mount as mcp_mount
from pps.rest import (
    anchors,
    audit,
    check,
    crystals,
    events,
    files,
    fragments,
    health,
    hooks,
    inventory,
    queue,
    recall,
    search,
    shared,
    summaries,
    texture,
)
from pps.rest.deps import Unauthorized, problem_response
from pps.rest.statuses import document
from pps.web import mount as web_mount


def create_app(settings: Settings, lock: DataDirLock | None = None) -> FastAPI:
    """The app for one data dir. Its lifespan holds the data dir's lock (one server per
    data dir) before anything starts: `lock` is one already taken (`pps serve` takes it
    before loading the engine); without it the lifespan takes its own and lets it go at
    shutdown, so the same process can serve the data dir again."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = None
        if lock is None or not lock.held:
            own = DataDirLock.acquire(
                settings.data_dir, SERVE, host=settings.host, port=settings.port
            )
        app.state.local_key = (own or lock).owner.key  # see current_operator
        try:
            app.state.db = Database.open(settings)
            app.state.runtime = Runtime(settings, app.state.db)
            app.state.runtime.start()
            try:
                async with serving_mcp():
                    yield
            finally:
                app.state.runtime.stop()
                app.state.db.close()
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
    _add_error_handlers(app)
    for router in (
        health.router,
        events.router,
        queue.router,
        check.router,
        check.operator,
        summaries.router,
        inventory.router,
        crystals.router,
        recall.router,
        hooks.router,
        audit.router,
        texture.router,
        search.router,
        anchors.router,
        fragments.router,
        files.router,
        shared.router,
        shared.operator,
    ):
        document(router)
        app.include_router(router)
    web_mount(app)  # the web face, /ui (docs/ui.md)
    serving_mcp = mcp_mount(app, settings.host)
    _complete_description(app, settings)
    return app


def _complete_description(app: FastAPI, settings: Settings) -> None:
    """What FastAPI's OpenAPI description does not say by itself, added once, when it is
    first made: the body of POST /v1/events (up to the settings' batch), and bounds as
    the whole numbers they are (FastAPI writes them as floats: 2**63 - 1 would read 2**63)."""

    def openapi() -> dict:
        if app.openapi_schema is None:
            described = FastAPI.openapi(app)
            events.describe_body(described, settings.max_batch)
            _exact_bounds(described)
        return app.openapi_schema

    app.openapi = openapi


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


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(InputError)
    async def input_error(request: Request, exc: InputError):
        return problem_response(422, "invalid_input", exc.problems)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError):
        # FastAPI prefixes each location with where it was found: body, query, header.
        errors = [{**e, "loc": e["loc"][1:]} for e in exc.errors()]
        invalid_json = any(err["type"] == "json_invalid" for err in errors)
        problems = from_validation(errors).problems
        return problem_response(400 if invalid_json else 422, "invalid_input", problems)

    @app.exception_handler(Unauthorized)
    async def unauthorized(request: Request, exc: Unauthorized):
        problems = [FieldProblem("Authorization", exc.problem)]
        challenge = bearer_challenge(exc.problem if exc.wrong else None)
        return problem_response(401, "unauthorized", problems, **{"WWW-Authenticate": challenge})

    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound):
        return problem_response(404, "not_found", [FieldProblem(exc.field, str(exc))])

    @app.exception_handler(Forbidden)
    async def forbidden(request: Request, exc: Forbidden):
        return problem_response(403, "forbidden", [FieldProblem(exc.field, str(exc))])

    @app.exception_handler(Conflict)
    async def conflict(request: Request, exc: Conflict):
        return problem_response(409, "conflict", [FieldProblem(exc.field, str(exc))])

    @app.exception_handler(StarletteHTTPException)
    async def no_route(request: Request, exc: StarletteHTTPException):
        """What routing answers itself: no route at the path (404), or none for the
        method (405, with every method the path takes: Starlette names one route's)."""
        path = request.url.path
        if exc.status_code == 405:
            allowed = ", ".join(_methods_at(request))
            problem = f"{request.method} is not served at {path}; it takes {allowed}"
            return problem_response(
                405, "method_not_allowed", [FieldProblem("method", problem)], Allow=allowed
            )
        if exc.status_code == 404:
            problems = [FieldProblem("path", f"nothing is served at {path}")]
            return problem_response(404, "not_found", problems)
        error = HTTPStatus(exc.status_code).phrase.lower().replace(" ", "_")
        problems = [FieldProblem("request", str(exc.detail))]
        return problem_response(exc.status_code, error, problems, **(exc.headers or {}))

    @app.exception_handler(BadUpstream)
    async def bad_upstream(request: Request, exc: BadUpstream):
        return problem_response(502, "bad_upstream", [FieldProblem(exc.component, str(exc))])

    @app.exception_handler(Unavailable)
    async def unavailable(request: Request, exc: Unavailable):
        problems = [FieldProblem(exc.component, str(exc))]
        return problem_response(503, "unavailable", problems, **{"Retry-After": "10"})


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _methods_at(request: Request) -> list[str]:
    """Every method some route serves at the request's path. A fixed path answers for
    itself: `/v1/anchors/search` lists its own route's methods, not those of
    `/v1/anchors/{name}`, whose pattern it also fits."""
    path = request.scope["path"]
    fitting = [
        (route.path == path, route.methods or set())
        for route in iter_route_contexts(request.app.router.routes)
        if route.path is not None and compile_path(route.path)[0].match(path)
    ]
    fixed = [methods for exact, methods in fitting if exact]
    served = set().union(*(fixed or [methods for _, methods in fitting]))
    return [method for method in _METHODS if method in served]


class BodyLimit:
    """Refuse request bodies over `max_bytes` with a 413 before any route reads them."""

    def __init__(self, app, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            return await self._refuse(scope, receive, send)
        received = 0

        async def limited_receive():
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                raise _TooLarge
            return message

        try:
            await self.app(scope, limited_receive, send)
        except _TooLarge:
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope, receive, send):
        problem = FieldProblem("body", f"request body over {self.max_bytes} bytes")
        response = problem_response(413, "too_large", [problem])
        await response(scope, receive, send)


class _TooLarge(Exception):
    pass
