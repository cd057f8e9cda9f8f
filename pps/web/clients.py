"""The clients page: each client that used the entity's token (its last call, its reads
and writes), the recent calls, and revoke. The token is one per entity, so revoking
rotates it (as `pps entity rotate` does): every client using it is refused from its next
call, and the new token is shown once, on the answer to the revoke, for the person to
give to the clients they keep."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

from engine.api import Service
from pps.http.deps import AppService
from pps.web.guard import SignedIn, Write
from pps.web.render import page_router, render

RECENT = 50

router = page_router()


@router.get("/clients")
def clients_page(request: Request, session: SignedIn, service: AppService) -> Response:
    return _page(request, service, session.entity)


@router.post("/clients/revoke")
def revoke(request: Request, session: Write, service: AppService) -> Response:
    """Rotate the entity's token (the page asks first); the new one is in this answer only."""
    token = service.entities.rotate(session.entity)
    # Every other browser signed in as this entity is signed out at its next request;
    # this one stays, on the new token.
    rotated = service.entities.holder(token)
    session.issued = rotated.issued if rotated else ""
    return _page(request, service, session.entity, new_token=token)


def _page(request: Request, service: Service, entity: str, new_token: str | None = None):
    return render(
        request,
        "clients.html",
        active="clients",
        clients=service.clients(entity),
        recent=service.recent_calls(entity, RECENT),
        new_token=new_token,
    )
