"""Search over REST: POST /v1/search (every tier, one ranking)."""

from __future__ import annotations

from fastapi import APIRouter

from engine import search
from engine.routes.deps import CurrentEntity, SearchIndex
from engine.search import SearchRequest, SearchResponse

router = APIRouter(prefix="/v1", tags=["search"])


@router.post(
    "/search",
    summary="Hybrid search over word-photos, fragments, memory files, documents and turns",
)
def post_search(body: SearchRequest, entity: CurrentEntity, index: SearchIndex) -> SearchResponse:
    return search.search(index, entity, body)
