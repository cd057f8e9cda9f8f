"""Word-photos (layer 2 anchors) over REST: /v1/anchors."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import Field

from engine.search import anchors
from engine.search.anchors import Anchor, AnchorIn, Anchors, AnchorSearch, Deleted, Resynced
from engine.search.hybrid import SearchResponse
from pps.http.deps import CurrentEntity, SearchIndex
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/anchors", tags=["anchors"])


@router.post("", status_code=201, summary="Save a word-photo (a dated markdown file)")
def save(body: AnchorIn, entity: CurrentEntity, index: SearchIndex) -> Anchor:
    return anchors.save(index, entity, body)


@router.get("", summary="Every word-photo on disk, newest first")
def list_anchors(entity: CurrentEntity, index: SearchIndex) -> Anchors:
    return anchors.list_all(index, entity)


# A word-photo's file name, as anchor_list gives it: no separator, no NUL, not '.' or '..'.
FileName = Annotated[str, Path(json_schema_extra={"pattern": r"^(?!\.\.?$)[^/\\\x00]+$"})]


class AnchorText(Anchor):
    content: str = Field(description="The word-photo's text, without its front matter.")


@router.get("/{name}", summary="One word-photo with its text", responses=problems(404))
def get(name: FileName, entity: CurrentEntity, index: SearchIndex) -> AnchorText:
    anchor, text = anchors.get(index, entity, name)
    return AnchorText(**anchor.model_dump(), content=text)


@router.put(
    "/{name}", summary="Rewrite a word-photo (its name and date stay)", responses=problems(404)
)
def edit(name: FileName, body: AnchorIn, entity: CurrentEntity, index: SearchIndex) -> Anchor:
    return anchors.edit(index, entity, name, body)


@router.delete("/{name}", summary="Delete a word-photo by its file name")
def delete(name: FileName, entity: CurrentEntity, index: SearchIndex) -> Deleted:
    return anchors.delete(index, entity, name)


@router.post("/resync", summary="Bring the index in step with the word_photos folder")
def resync(entity: CurrentEntity, index: SearchIndex) -> Resynced:
    return anchors.resync(index, entity)


@router.post("/search", summary="Search word-photos by meaning and words")
def search(body: AnchorSearch, entity: CurrentEntity, index: SearchIndex) -> SearchResponse:
    return anchors.search_anchors(index, entity, body)
