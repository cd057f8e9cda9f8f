"""The retrieval audit over REST: draw logged recalls, judge what they surfaced, and
precision@k per layer and by week, and the share of recalled items the reply used (the
web face's audit and recall pages call the same services)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engine.recall.audit import Drawn, DrawQuery, Judgment, JudgmentIn, Precision, PrecisionQuery
from engine.recall.used import UsedShare
from pps.http.deps import CurrentMemory
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/audit", tags=["audit"])


@router.get("/draw", summary="Logged recalls drawn at random, each item with its judgment")
def draw(query: Annotated[DrawQuery, Query()], memory: CurrentMemory) -> Drawn:
    return memory.audit.draw(query)


@router.post(
    "/judgments",
    summary="Judge one item of a logged recall relevant or not",
    responses=problems(404),
)
def judge(body: JudgmentIn, memory: CurrentMemory) -> Judgment:
    return memory.audit.judge(body, face="rest")


@router.get("/precision", summary="precision@k of the judged recalls, per layer and by week")
def precision(query: Annotated[PrecisionQuery, Query()], memory: CurrentMemory) -> Precision:
    return memory.audit.precision(query)


@router.get("/used", summary="The share of recalled items the reply used, per layer and by week")
def used_share(memory: CurrentMemory) -> UsedShare:
    return memory.used_share()
