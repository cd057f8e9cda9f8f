"""What every page of the web face shares: the templates, rendering with the navigation
and the session, and how a page answers what goes wrong (`PageRoute`, on every router
`page_router()` makes): not signed in, back to the sign-in page; refused, an error page
with the status; an engine error, an error page with the status the engine's error
table gives it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates
from pydantic import ValidationError

from engine.kernel import timestamps
from engine.kernel.errors import ANSWERS, EngineError, InputError, answer, from_validation
from pps.web import guard
from pps.web.guard import Refused, SignInNeeded

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")


def when(value: str | None, seconds: bool = False) -> str:
    """A stored time as a person reads it, with its zone: "2026-12-01 23:13 UTC". A time
    written with another offset (a file's) is shown in UTC too; one with none is UTC."""
    if not value:
        return ""
    try:
        moment = timestamps.parse(value)
    except ValueError:
        return value
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC" if seconds else "%Y-%m-%d %H:%M UTC")


templates.env.filters["when"] = when
# A recall of more items than this (a startup recall) is shown folded, one closed part per
# layer: on the recall page and in the audit.
templates.env.globals["FOLD_OVER"] = 20
NAV = (
    ("timeline", "Timeline"),
    ("recall", "Recall"),
    ("queue", "Queue"),
    ("audit", "Audit"),
    ("graph", "Graph"),
    ("memory", "Memory"),
    ("memories", "Memories"),
    ("shared", "Shared"),
    ("clients", "Clients"),
)


class PageRoute(APIRoute):
    """A route that answers what goes wrong as a page: not signed in, back to the sign-in
    page; refused, bad input, an engine error, an error page with the status."""

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()

        async def page(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInNeeded:
                return guard.harden(RedirectResponse("/ui", status_code=303))
            except Refused as exc:
                return error_page(request, exc.status, exc.problem)
            except (RequestValidationError, ValidationError) as exc:
                problems = from_validation(_locations(exc.errors())).problems
                invalid = ANSWERS[InputError].status
                return error_page(request, invalid, "; ".join(str(p) for p in problems))
            except EngineError as exc:
                return error_page(request, answer(exc).status, _in_words(exc))

        return page


def _locations(errors: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Validation errors as the engine words them: FastAPI's say where (query, path)."""
    return [
        {**e, "loc": e["loc"][1:]} if e["loc"] and e["loc"][0] in ("query", "path", "body") else e
        for e in errors
    ]


def _in_words(error: EngineError) -> str:
    """The error on one line for a person: the component at fault first, where one is."""
    return f"{error.component}: {error}" if error.component else str(error)


def page_router() -> APIRouter:
    """A router of pages under /ui: each answers as `PageRoute` does, none is in the
    OpenAPI description, and every request to one passes `guard.same_origin`."""
    return APIRouter(
        prefix="/ui",
        route_class=PageRoute,
        include_in_schema=False,
        dependencies=[Depends(guard.same_origin)],
    )


def render(request: Request, template: str, http_status: int = 200, **context: Any) -> HTMLResponse:
    session = getattr(request.state, "ui_session", None)
    context = {"session": session, "nav": NAV, **context}
    response = templates.TemplateResponse(request, template, context, status_code=http_status)
    return guard.harden(response)


def error_page(request: Request, status: int, problem: str) -> HTMLResponse:
    return render(request, "error.html", http_status=status, status_code=status, problem=problem)


def blank(value: str | None) -> str | None:
    """A form field left empty is a filter not given."""
    return value.strip() or None if value is not None else None
