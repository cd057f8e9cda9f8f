"""ambient_recall over REST: POST /v1/recall, and the recall log for audits."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from engine.recall import ambient as recall
from engine.recall.ambient import LogEntry, Recall, RecallRequest
from pps.rest.deps import DB, CurrentEntity

router = APIRouter(prefix="/v1/recall", tags=["recall"])


@router.post("", summary='Every layer in one call: "startup", or the moment to recall for')
def ambient_recall(body: RecallRequest, entity: CurrentEntity, request: Request) -> Recall:
    return recall.recall(request.app.state.runtime, entity, body)


class Log(BaseModel):
    entries: list[LogEntry]


@router.get("/log", summary="What recent recalls surfaced and why (when PPS_RECALL_LOG is on)")
def recall_log(
    entity: CurrentEntity, db: DB, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> Log:
    return Log(entries=recall.log_entries(db, entity, limit))
