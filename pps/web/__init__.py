"""The web face (the Observatory): server-rendered pages under /ui on the same port as
REST and MCP, over the same front door (engine.api) and request models REST uses.

`mount(app)` adds the session store and each router: the sign-in, timeline, recall,
queue and audit pages (pps.web.pages) with the JSON they poll (/ui/api), the graph page
(pps.web.graph), the memory page (pps.web.memory), the memories and shared stores pages
(pps.web.memories), the clients page (pps.web.clients)
and /favicon.ico. The entity signs in with its
token once; a session cookie carries it from then on (see pps.web.guard and
pps.web.sessions, and docs/ui.md).
"""

from __future__ import annotations

from fastapi import FastAPI, Request

from engine.kernel.errors import FieldProblem
from pps.http.errors import problem_response
from pps.web import clients, graph, guard, memories, memory, pages
from pps.web.sessions import Sessions, SignIns


def mount(app: FastAPI) -> None:
    app.state.ui_sessions = Sessions()
    app.state.ui_sign_ins = SignIns()
    routers = (pages.pages, pages.api, pages.icon, graph.router, memory.router)
    for router in (*routers, memories.router, clients.router):
        app.include_router(router)

    @app.exception_handler(guard.Refused)
    async def refused(request: Request, exc: guard.Refused):
        """Refusals of the JSON endpoints (pages answer theirs as pages)."""
        return problem_response(exc.status, exc.error, [FieldProblem(exc.field, exc.problem)])
