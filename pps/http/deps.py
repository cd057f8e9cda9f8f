"""What routes of every face need from the app: the service (the engine's front door),
the settings, and the caller (an entity by its token, with its memory, or the operator)."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from engine.api import Memory, Service
from engine.kernel.config import Settings
from engine.kernel.errors import Forbidden, InputError

MISSING_TOKEN = "missing: send 'Authorization: Bearer <token>'"
UNKNOWN_TOKEN = "unknown or revoked token"
EMPTY_TOKEN = "empty: the Authorization header says Bearer and no token (an empty token file?)"
"""What a 401 says, on every face: no bearer token came, one that is no one's, or
`Bearer` with nothing after it."""


class Unauthorized(Exception):
    """A 401: `problem` in words; `wrong` when a bearer token came and is not one we know
    (the challenge then says `invalid_token`)."""

    def __init__(self, problem: str, wrong: bool = False):
        self.problem, self.wrong = problem, wrong


def no_token(authorization: str) -> Unauthorized:
    """The 401 of a request that brought no bearer token. `Bearer` with nothing after it
    is a token that came empty (`Bearer $(cat FILE)` of a missing file), which the client
    is told as `invalid_token` with why, so it can show it; no Authorization header at all,
    or another scheme, is challenged with a bare `Bearer` (RFC 6750, 3.1)."""
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() == "bearer" and not token.strip():
        return Unauthorized(EMPTY_TOKEN, wrong=True)
    return Unauthorized(MISSING_TOKEN)


def get_service(request: Request) -> Service:
    return request.app.state.service


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


_bearer = HTTPBearer(auto_error=False, description="The entity's token from `pps entity create`.")


def current_entity(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """The entity the bearer token belongs to. The token is the only way to name one."""
    if credentials is None:
        raise no_token(request.headers.get("authorization", ""))
    entity = get_service(request).entities.authenticate(credentials.credentials)
    if entity is None:
        raise Unauthorized(UNKNOWN_TOKEN, wrong=True)
    request.state.entity = entity  # whose call it was (pps.http.calls)
    _refuse_unknown_query(request)
    return entity


_operator_bearer = HTTPBearer(
    auto_error=False, description="The operator's token from `pps operator token`."
)


def current_operator(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_operator_bearer)],
) -> None:
    """Let an operator act through only with the operator's token, or the server's local
    key (in the data dir's lock file, 0600: whoever can read the data dir, as `pps check`
    on the server's machine can): an entity's token is refused (403), since no agent may
    make itself a member of anything, nor read another's memory."""
    if credentials is None:
        raise Unauthorized("missing: send 'Authorization: Bearer <operator token>'")
    known = get_service(request).entities
    local = getattr(request.app.state, "local_key", None)
    if local is not None and secrets.compare_digest(credentials.credentials, local):
        _refuse_unknown_query(request)
        return
    if not known.is_operator(credentials.credentials):
        if known.authenticate(credentials.credentials) is not None:
            raise Forbidden(
                "an entity's token cannot do an operator's act; use the operator's token"
                " (`pps operator token`)",
                field="Authorization",
            )
        raise Unauthorized(UNKNOWN_TOKEN, wrong=True)
    _refuse_unknown_query(request)


def _refuse_unknown_query(request: Request) -> None:
    """A query parameter the route does not take is an error, not silently ignored: a
    caller who adds `?entity=other` or misspells a filter must hear about it. What a
    route takes is what its OpenAPI description lists (query models included)."""
    route = request.scope.get("route")
    if route is None or not request.query_params:
        return
    operation = request.app.openapi()["paths"][route.path_format][request.method.lower()]
    query = {p["name"]: p["schema"] for p in operation.get("parameters", []) if p["in"] == "query"}
    for name in request.query_params:
        if name not in query:
            known = f"it takes {', '.join(query)}" if query else "it takes none"
            raise InputError.of(name, f"unknown query parameter; {known}")
        # One value where the route takes one: `?category=a&category=b` is not silently `b`.
        given = len(request.query_params.getlist(name))
        if given > 1 and not _is_list(query[name]):
            raise InputError.of(name, f"given {given} times; it takes one value")


def _is_list(schema: dict) -> bool:
    return schema.get("type") == "array" or any(_is_list(s) for s in schema.get("anyOf", []))


def current_memory(request: Request, entity: Annotated[str, Depends(current_entity)]) -> Memory:
    """The memory of the entity the bearer token belongs to: the only one a call reaches."""
    return get_service(request).memory(entity)


AppService = Annotated[Service, Depends(get_service)]
CurrentEntity = Annotated[str, Depends(current_entity)]
CurrentMemory = Annotated[Memory, Depends(current_memory)]
Operator = Depends(current_operator)
AppSettings = Annotated[Settings, Depends(get_settings)]
