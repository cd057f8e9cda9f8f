"""Which error statuses each route answers, in its OpenAPI description, with the one
error body (`Problem`) instead of FastAPI's own validation-error schema.

Most follow from what a route takes, so `document(router)` derives them for each of a
router's routes, before the app includes it:

- a token (an entity's or the operator's): 401, and 422 (a query parameter the route
  does not take is refused, on every authenticated route); the operator's: 403 too (an
  entity's token);
- parameters: 422; a JSON body: 400 (not JSON) and 413 (over PPS_MAX_REQUEST_BYTES);
- a path naming a thing: 404;
- a method that writes (not GET): 503 (the database on a full disk, the graph down for a
  delete). Reads answer with less instead (the graph's status in the answer).

What a route's engine call can raise beyond that (a 404 for a name in the query, a 409,
a 403) the route declares with `problems(...)`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute

from engine.kernel.errors import ANSWERS, Problem
from pps.http.deps import current_entity, current_operator

WHEN = {
    400: "The body is not valid JSON",
    401: "A missing, unknown or revoked token (with `WWW-Authenticate: Bearer`, and"
    ' `error="invalid_token"` when a bearer token came and is no one\'s)',
    413: "A body over PPS_MAX_REQUEST_BYTES",
    **{said.status: said.when for said in ANSWERS.values()},  # the engine's errors
}
"""What each error status means: those of the HTTP layer, then the engine's error table."""


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for these error statuses, each with the error body."""
    return {status: {"model": Problem, "description": WHEN[status]} for status in statuses}


def document(router: APIRouter) -> None:
    """Add the statuses each route answers by what it takes (above) to its `responses`;
    what the route declared itself stays."""
    for route in router.routes:
        if not isinstance(route, APIRoute):
            continue
        dependants = [route.dependant, *_walk(route.dependant)]  # router's too
        calls = {dep.call for dep in dependants}
        path_params = any(dep.path_params for dep in dependants)
        query_params = any(dep.query_params for dep in dependants)
        statuses: set[int] = set()
        if current_entity in calls or current_operator in calls:
            statuses |= {401, 422}
        if current_operator in calls:
            statuses.add(403)
        if query_params or path_params or route.body_field is not None:
            statuses.add(422)
        if route.body_field is not None:
            statuses |= {400, 413}
        if path_params:
            statuses.add(404)
        if route.methods and route.methods - {"GET", "HEAD"}:
            statuses.add(503)
        documented = problems(*sorted(statuses))
        route.responses = {**documented, **route.responses}


def _walk(dependant):
    for dep in dependant.dependencies:
        yield dep
        yield from _walk(dep)
