"""The clients page: each client that used the entity's token (its last call, its reads
and writes), the recent calls, and revoke. The token is one per entity, so revoking
rotates it (engine.capture.entities.rotate, as `pps entity rotate` does): every client
using it is refused from its next call, and the new token is shown once, on the answer
to the revoke, for the person to give to the clients they keep."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

from engine.capture import entities
from pps.http.deps import DB, AppRuntime
from pps.web.guard import SignedIn, Write
from pps.web.render import page_router, render

RECENT = 50

router = page_router()


@router.get("/clients")
def clients_page(request: Request, session: SignedIn, runtime: AppRuntime) -> Response:
    return _page(request, runtime, session.entity)


@router.post("/clients/revoke")
def revoke(request: Request, session: Write, db: DB, runtime: AppRuntime) -> Response:
    """Rotate the entity's token (the page asks first); the new one is in this answer only."""
    token = entities.rotate(db, session.entity)
    # Every other browser signed in as this entity is signed out at its next request;
    # this one stays, on the new token.
    rotated = entities.holder(db, token)
    session.issued = rotated.issued if rotated else ""
    return _page(request, runtime, session.entity, new_token=token)


def _page(request: Request, runtime: AppRuntime, entity: str, new_token: str | None = None):
    return render(
        request,
        "clients.html",
        active="clients",
        clients=runtime.clients.clients(entity),
        recent=runtime.clients.recent(entity, RECENT),
        new_token=new_token,
    )
