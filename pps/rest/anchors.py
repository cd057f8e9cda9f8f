"""Word-photos (layer 2 anchors) over REST: /v1/anchors."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from engine.search import anchors
from engine.search.anchors import Anchor, AnchorIn
from engine.search.hybrid import SearchResponse
from pps.rest.deps import CurrentEntity, SearchIndex

router = APIRouter(prefix="/v1/anchors", tags=["anchors"])


class Anchors(BaseModel):
    anchors: list[Anchor]


class Deleted(BaseModel):
    deleted: str


class Resynced(BaseModel):
    added: int
    updated: int
    removed: int
    unchanged: int


class AnchorQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4096)
    limit: int = Field(10, ge=1, le=100)


@router.post("", status_code=201, summary="Save a word-photo (a dated markdown file)")
def save(body: AnchorIn, entity: CurrentEntity, index: SearchIndex) -> Anchor:
    return anchors.save(index, entity, body)


@router.get("", summary="Every word-photo on disk, newest first")
def list_anchors(entity: CurrentEntity, index: SearchIndex) -> Anchors:
    return Anchors(anchors=anchors.list_all(index, entity))


@router.delete("/{name}", summary="Delete a word-photo by its file name")
def delete(name: str, entity: CurrentEntity, index: SearchIndex) -> Deleted:
    return Deleted(deleted=anchors.delete(index, entity, name))


@router.post("/resync", summary="Bring the index in step with the word_photos folder")
def resync(entity: CurrentEntity, index: SearchIndex) -> Resynced:
    report = anchors.resync(index, entity)
    return Resynced(**{k: getattr(report, k) for k in Resynced.model_fields})


@router.post("/search", summary="Search word-photos by meaning and words")
def search(body: AnchorQuery, entity: CurrentEntity, index: SearchIndex) -> SearchResponse:
    return anchors.search_anchors(index, entity, body.query, body.limit)
