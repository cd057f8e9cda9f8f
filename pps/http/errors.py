"""Every error an HTTP face answers, in the one error shape (`engine.kernel.errors.
Problem`): the engine's errors by the one error table (`ANSWERS`), and what the HTTP
layer refuses itself (a bad or missing token, invalid parameters, no route, a body too
large). Every 4xx, 502 and 503 body is `{"error", "message", "problems": [{"field",
"problem"}]}`.
"""

from __future__ import annotations

from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from engine.kernel.errors import (
    EngineError,
    FieldProblem,
    answer,
    bearer_challenge,
    from_validation,
    problem_body,
)
from pps.http.deps import Unauthorized


def problem_response(
    status: int, error: str, problems: list[FieldProblem], **headers: str
) -> JSONResponse:
    return JSONResponse(
        status_code=status, content=problem_body(error, problems), headers=headers or None
    )


def engine_error_response(exc: EngineError) -> JSONResponse:
    """An engine error as its row of the error table says."""
    said = answer(exc)
    headers = {"Retry-After": said.retry_after} if said.retry_after else {}
    return problem_response(said.status, said.code, exc.problems, **headers)


def add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(EngineError)
    async def engine_error(request: Request, exc: EngineError):
        return engine_error_response(exc)

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
        if isinstance(exc.__cause__, _TooLarge):  # FastAPI read the body, past the limit
            return BodyLimit.too_large(request.app.state.settings.max_request_bytes)
        if exc.status_code == 400 and exc.__cause__ is not None:  # FastAPI could not read it
            why = "nested too deeply" if isinstance(exc.__cause__, RecursionError) else "unreadable"
            problems = [FieldProblem("body", f"the body is not JSON this service reads: {why}")]
            return problem_response(400, "invalid_input", problems)
        error = HTTPStatus(exc.status_code).phrase.lower().replace(" ", "_")
        problems = [FieldProblem("request", str(exc.detail))]
        return problem_response(exc.status_code, error, problems, **(exc.headers or {}))


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
        await self.too_large(self.max_bytes)(scope, receive, send)

    @staticmethod
    def too_large(max_bytes: int) -> JSONResponse:
        problem = FieldProblem("body", f"request body over {max_bytes} bytes")
        return problem_response(413, "too_large", [problem])


class _TooLarge(Exception):
    pass
