"""Word Walker's store over REST: POST /v1/fragments."""

from __future__ import annotations

from fastapi import APIRouter

from engine.search import fragments
from engine.search.fragments import FragmentIn, Stored
from pps.http.deps import CurrentEntity, SearchIndex

router = APIRouter(prefix="/v1", tags=["fragments"])


@router.post(
    "/fragments", status_code=201, summary="Store a memory as a dated fragment, searchable at once"
)
def store(body: FragmentIn, entity: CurrentEntity, index: SearchIndex) -> Stored:
    return fragments.store(index, entity, body)
