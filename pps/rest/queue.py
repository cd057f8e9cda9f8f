"""The caller's own queue over REST: GET /v1/queue, POST /v1/queue/retry."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from engine.kernel.requests import Request
from engine.store.queue import QueueStatus
from pps.http.deps import CurrentMemory

router = APIRouter(prefix="/v1/queue", tags=["queue"])


@router.get(
    "", summary="Jobs by state, the oldest unfinished job's age, dead jobs, pauses, backlogs"
)
def queue_status(memory: CurrentMemory) -> QueueStatus:
    return memory.queue()


class RetryRequest(Request):
    dead: bool = False


class Requeued(BaseModel):
    requeued: int


@router.post("/retry", summary="Put waiting and retrying jobs (and dead ones) back now")
def queue_retry(memory: CurrentMemory, body: RetryRequest | None = None) -> Requeued:
    return Requeued(requeued=memory.retry(dead=(body or RetryRequest()).dead))
