"""Word-photos (layer 2 anchors) over REST: /v1/anchors."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import Field

from engine.search.anchors import Anchor, AnchorIn, Anchors, AnchorSearch, Deleted, Resynced
from engine.search.hybrid import SearchResponse
from pps.http.deps import CurrentMemory
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/anchors", tags=["anchors"])


@router.post("", status_code=201, summary="Save a word-photo (a dated markdown file)")
def save(body: AnchorIn, memory: CurrentMemory) -> Anchor:
    return memory.anchors.save(body)


@router.get("", summary="Every word-photo on disk, newest first")
def list_anchors(memory: CurrentMemory) -> Anchors:
    return memory.anchors.list()


# A word-photo's file name, as anchor_list gives it: no separator, no NUL, not '.' or '..'.
FileName = Annotated[str, Path(json_schema_extra={"pattern": r"^(?!\.\.?$)[^/\\\x00]+$"})]


class AnchorText(Anchor):
    content: str = Field(description="The word-photo's text, without its front matter.")


@router.get("/{name}", summary="One word-photo with its text", responses=problems(404))
def get(name: FileName, memory: CurrentMemory) -> AnchorText:
    anchor, text = memory.anchors.get(name)
    return AnchorText(**anchor.model_dump(), content=text)


@router.put(
    "/{name}", summary="Rewrite a word-photo (its name and date stay)", responses=problems(404)
)
def edit(name: FileName, body: AnchorIn, memory: CurrentMemory) -> Anchor:
    return memory.anchors.edit(name, body)


@router.delete("/{name}", summary="Delete a word-photo by its file name")
def delete(name: FileName, memory: CurrentMemory) -> Deleted:
    return memory.anchors.delete(name)


@router.post("/resync", summary="Bring the index in step with the word_photos folder")
def resync(memory: CurrentMemory) -> Resynced:
    return memory.anchors.resync()


@router.post("/search", summary="Search word-photos by meaning and words")
def search(body: AnchorSearch, memory: CurrentMemory) -> SearchResponse:
    return memory.anchors.search(body)
