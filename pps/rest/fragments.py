"""Word Walker's store over REST: POST /v1/fragments."""

from __future__ import annotations

from fastapi import APIRouter

from engine.search.fragments import FragmentIn, Stored
from pps.http.deps import CurrentMemory

router = APIRouter(prefix="/v1", tags=["fragments"])


@router.post(
    "/fragments", status_code=201, summary="Store a memory as a dated fragment, searchable at once"
)
def store(body: FragmentIn, memory: CurrentMemory) -> Stored:
    return memory.files.store_fragment(body)
