"""memory_get over REST: GET /v1/files, lines of a file in the entity's home."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from engine.api.search import Files
from engine.kernel.limits import MAX_READ_LINES
from engine.kernel.requests import Request
from engine.search.homes import FileLines, HomeFile
from pps.http.deps import CurrentMemory
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1", tags=["files"])


# What `Home.resolve` refuses by its text alone: an absolute path (/, \, ~, a drive), a
# '..' part, a NUL, a name that is not a text file's.
PATH_PATTERN = (
    r"^(?![/\\~])(?![A-Za-z]:)(?![\s\S]*(?:^|[/\\])\.\.(?:[/\\]|$))[^\x00]*"
    f"(?:{'|'.join(re.escape(suffix) for suffix in Files.TEXT_SUFFIXES)})$"
)


class FileQuery(Request):
    path: str = Field(
        min_length=1,
        max_length=1024,
        description="Relative to your home: a text file (.md, .markdown, .txt) in it.",
        json_schema_extra={"pattern": PATH_PATTERN},
    )
    start: int = Field(1, ge=1, alias="from", description="First line, 1-based.")
    lines: int | None = Field(None, ge=1, le=MAX_READ_LINES, description="How many.")


@router.get(
    "/files",
    summary="Read lines of a file in your home (after a search hit)",
    responses=problems(404),
)
def read(query: Annotated[FileQuery, Query()], memory: CurrentMemory) -> FileLines:
    return memory.files.read(query.path, query.start, query.lines)


class FileList(BaseModel):
    files: list[HomeFile]


class ListQuery(Request):
    kind: Literal["anchor", "fragment", "memory", "document", "journal"] | None = Field(
        None, description="Only files of this kind."
    )


@router.get("/files/list", summary="The memory files of your home, newest first")
def list_files(query: Annotated[ListQuery, Query()], memory: CurrentMemory) -> FileList:
    return FileList(files=memory.files.list(query.kind))
