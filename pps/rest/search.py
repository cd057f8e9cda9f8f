"""Search over REST: POST /v1/search (every tier, one ranking); GET /v1/search/index
(what the entity's index holds)."""

from __future__ import annotations

from fastapi import APIRouter

from engine.search.hybrid import SearchRequest, SearchResponse
from engine.search.index import IndexStats
from pps.http.deps import CurrentMemory

router = APIRouter(prefix="/v1", tags=["search"])


@router.post(
    "/search",
    summary="Hybrid search over word-photos, fragments, memory files, documents and turns",
)
def post_search(body: SearchRequest, memory: CurrentMemory) -> SearchResponse:
    return memory.search(body)


@router.get("/search/index", summary="What the entity's search index holds")
def index_stats(memory: CurrentMemory) -> IndexStats:
    return memory.search.stats()
