"""The retrieval audit over REST: draw logged recalls, judge what they surfaced, and
precision@k per layer and by week, and the share of recalled items the reply used (the
web face's audit and recall pages call the same services)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engine.recall import audit, used
from engine.recall.audit import Drawn, DrawQuery, Judgment, JudgmentIn, Precision, PrecisionQuery
from engine.recall.used import UsedShare
from pps.http.deps import DB, CurrentEntity
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/audit", tags=["audit"])


@router.get("/draw", summary="Logged recalls drawn at random, each item with its judgment")
def draw(query: Annotated[DrawQuery, Query()], entity: CurrentEntity, db: DB) -> Drawn:
    return audit.draw(db, entity, query)


@router.post(
    "/judgments",
    summary="Judge one item of a logged recall relevant or not",
    responses=problems(404),
)
def judge(body: JudgmentIn, entity: CurrentEntity, db: DB) -> Judgment:
    return audit.judge(db, entity, body, face="rest")


@router.get("/precision", summary="precision@k of the judged recalls, per layer and by week")
def precision(
    query: Annotated[PrecisionQuery, Query()], entity: CurrentEntity, db: DB
) -> Precision:
    return audit.precision(db, entity, query)


@router.get("/used", summary="The share of recalled items the reply used, per layer and by week")
def used_share(entity: CurrentEntity, db: DB) -> UsedShare:
    return used.share(db, entity)
