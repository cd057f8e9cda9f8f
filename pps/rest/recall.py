"""ambient_recall over REST: POST /v1/recall, and the recall log for audits."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engine.recall.log import Log, LogQuery
from engine.recall.shapes import Recall, RecallRequest
from pps.http.deps import CurrentMemory

router = APIRouter(prefix="/v1/recall", tags=["recall"])


@router.post("", summary='Every layer in one call: "startup", or the moment to recall for')
def ambient_recall(body: RecallRequest, memory: CurrentMemory) -> Recall:
    return memory.recall(body)


@router.get("/log", summary="What recent recalls surfaced and why (when PPS_RECALL_LOG is on)")
def recall_log(query: Annotated[LogQuery, Query()], memory: CurrentMemory) -> Log:
    return memory.recall_log(query)
