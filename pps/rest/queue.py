"""The caller's own queue over REST: GET /v1/queue, POST /v1/queue/retry."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from engine import backlogs
from engine.kernel.requests import Request
from engine.store import queue
from engine.store.queue import QueueStatus
from pps.http.deps import DB, AppSettings, CurrentEntity

router = APIRouter(prefix="/v1/queue", tags=["queue"])


@router.get(
    "", summary="Jobs by state, the oldest unfinished job's age, dead jobs, pauses, backlogs"
)
def queue_status(entity: CurrentEntity, db: DB, settings: AppSettings) -> QueueStatus:
    return backlogs.queue_status(db, settings, entity)


class RetryRequest(Request):
    dead: bool = False


class Requeued(BaseModel):
    requeued: int


@router.post("/retry", summary="Put waiting and retrying jobs (and dead ones) back now")
def queue_retry(entity: CurrentEntity, db: DB, body: RetryRequest | None = None) -> Requeued:
    return Requeued(requeued=queue.retry(db, entity, dead=(body or RetryRequest()).dead))
