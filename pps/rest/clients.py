"""Who called, over REST: GET /v1/clients, the entity's own clients with their last call
and counts, and its most recent calls (engine.capture.clients)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from engine.capture.clients import Call, ClientRecord
from pps.http.deps import AppService, CurrentEntity

router = APIRouter(prefix="/v1", tags=["clients"])


class Clients(BaseModel):
    clients: list[ClientRecord]
    """Each client, the last to call first."""
    recent: list[Call]
    """The most recent calls, newest first (this one is recorded once answered)."""


@router.get("/clients", summary="Your clients: each one's last call and counts, recent calls")
def clients(
    entity: CurrentEntity,
    service: AppService,
    recent: Annotated[int, Query(ge=0, le=200, description="How many recent calls")] = 20,
) -> Clients:
    return Clients(clients=service.clients(entity), recent=service.recent_calls(entity, recent))
