"""ambient_recall over REST: POST /v1/recall, and the recall log for audits."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engine.recall import ambient as recall
from engine.recall.ambient import Log, LogQuery, Recall, RecallRequest
from pps.http.deps import DB, AppRuntime, CurrentEntity

router = APIRouter(prefix="/v1/recall", tags=["recall"])


@router.post("", summary='Every layer in one call: "startup", or the moment to recall for')
def ambient_recall(body: RecallRequest, entity: CurrentEntity, runtime: AppRuntime) -> Recall:
    return recall.recall(runtime, entity, body)


@router.get("/log", summary="What recent recalls surfaced and why (when PPS_RECALL_LOG is on)")
def recall_log(query: Annotated[LogQuery, Query()], entity: CurrentEntity, db: DB) -> Log:
    return recall.log_entries(db, entity, query)
