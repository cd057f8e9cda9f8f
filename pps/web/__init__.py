"""The web face (the Observatory): server-rendered pages under /ui on the same port as
REST and MCP, over the same engine services and request models REST uses.

`mount(app)` adds the pages, the JSON they poll (/ui/api) and the session store. The
entity signs in with its token once; a session cookie carries it from then on (see
pps.web.guard and pps.web.sessions, and docs/ui.md).
"""

from __future__ import annotations

from fastapi import FastAPI, Request

from engine.kernel.errors import FieldProblem
from pps.rest.deps import problem_response
from pps.web import graph as _graph  # noqa: F401  (its routes join pages.pages)
from pps.web import guard, pages
from pps.web import memory as _memory  # noqa: F401
from pps.web.sessions import Sessions, SignIns


def mount(app: FastAPI) -> None:
    app.state.ui_sessions = Sessions()
    app.state.ui_sign_ins = SignIns()
    app.include_router(pages.pages)
    app.include_router(pages.api)

    @app.exception_handler(guard.Refused)
    async def refused(request: Request, exc: guard.Refused):
        """Refusals of the JSON endpoints (pages answer theirs as pages)."""
        return problem_response(exc.status, exc.error, [FieldProblem(exc.field, exc.problem)])
