"""Forgetting over REST: /v1/forget (engine.forgetting)."""

from __future__ import annotations

from fastapi import APIRouter

from engine.forgetting import ForgetRequest, Receipt, Tombstones
from pps.http.deps import CurrentMemory
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/forget", tags=["forget"])


@router.post(
    "",
    summary="Forget an event, a word-photo or a fact from every layer; answers with a receipt",
    responses=problems(404, 503),
)
def forget(body: ForgetRequest, memory: CurrentMemory) -> Receipt:
    return memory.forget(body, asked_by="rest")


@router.get("", summary="What this entity forgot: its tombstones, newest first")
def tombstones(memory: CurrentMemory) -> Tombstones:
    return memory.tombstones()
