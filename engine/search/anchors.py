"""Layer 2's core anchors: word-photos, the curated markdown files that say who the
entity is. Each is `word_photos/<date>_<slug>.md` in the entity's home, with title, date
and tags in its front matter. They are plain files: a person may write, edit or delete
them by hand, and `resync` (or the watcher) brings the index in step.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import PurePosixPath

from pydantic import BaseModel, Field

from engine.kernel.errors import InputError, NotFound
from engine.kernel.requests import NON_BLANK, Request, is_blank
from engine.search import chunks, homes
from engine.search.fragments import check_text, checked_tags, slug, with_front_matter
from engine.search.hybrid import Query, SearchRequest, SearchResponse, Tag, search
from engine.search.index import Index


class AnchorIn(Request):
    title: str = Field(
        max_length=200, description="What the word-photo is of.", json_schema_extra=NON_BLANK
    )
    content: str = Field(description="The word-photo, markdown.", json_schema_extra=NON_BLANK)
    tags: list[Tag] = Field(default_factory=list)


class Anchor(BaseModel):
    name: str
    path: str
    title: str
    date: str | None
    tags: list[str]


class Anchors(BaseModel):
    anchors: list[Anchor]


class Deleted(BaseModel):
    deleted: str


class Resynced(BaseModel):
    added: int
    updated: int
    removed: int
    unchanged: int
    embedded: int
    errors: list[str] = Field(description="Files that could not be read or indexed, and why.")
    skipped: list[homes.SkippedFile] = Field(
        description="Files not indexed because of their names, and why."
    )


class AnchorSearch(Request):
    query: Query
    limit: int = Field(10, ge=1, le=100)


def save(index: Index, entity: str, anchor: AnchorIn) -> Anchor:
    title = anchor.title.strip()
    if is_blank(title):
        raise InputError.of("title", "empty; name the word-photo")
    content = check_text("content", anchor.content, index.settings.search_max_text_bytes)
    tags = checked_tags(anchor.tags, required=False)
    day = datetime.now(UTC).date().isoformat()
    header = {"title": title, "date": day, "tags": tags}
    home = index.home(entity)
    path = homes.write_new(
        home, homes.WORD_PHOTOS, f"{day}_{slug(title)}", with_front_matter(header, content)
    )
    index.sync_file(entity, path)
    return Anchor(name=PurePosixPath(path).name, path=path, title=title, date=day, tags=tags)


def get(index: Index, entity: str, name: str) -> tuple[Anchor, str]:
    """One word-photo by its file name: what it is, and its text without front matter."""
    relative = _relative(name)
    home = index.home(entity)
    try:
        path = home.resolve(relative, field="name")
        text = path.read_text(encoding="utf-8", errors="replace")
    except (NotFound, OSError):
        raise NotFound(f"no word-photo named {PurePosixPath(relative).name!r}") from None
    lines = text.splitlines()
    meta, body = chunks.front_matter(lines)
    anchor = Anchor(
        name=PurePosixPath(relative).name,
        path=relative,
        title=str(meta.get("title") or PurePosixPath(relative).stem),
        date=chunks.meta_date(meta),
        tags=chunks.meta_tags(meta),
    )
    return anchor, "\n".join(lines[body:]).strip("\n")


def edit(index: Index, entity: str, name: str, anchor: AnchorIn) -> Anchor:
    """Rewrite one word-photo in place: its title, text and tags; its name and date stay
    (the file is replaced whole, never half written)."""
    before, _ = get(index, entity, name)
    title = anchor.title.strip()
    if not title:
        raise InputError.of("title", "empty; name the word-photo")
    content = check_text("content", anchor.content, index.settings.search_max_text_bytes)
    tags = checked_tags(anchor.tags, required=False)
    header = {"title": title, "date": before.date, "tags": tags}
    home = index.home(entity)
    homes.replace_file(home, before.path, with_front_matter(header, content))
    index.sync_file(entity, before.path)
    return Anchor(name=before.name, path=before.path, title=title, date=before.date, tags=tags)


def _relative(name: str) -> str:
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise InputError.of("name", "a word-photo's file name, as anchor_list gives it")
    if not name.endswith(homes.TEXT_SUFFIXES):
        name += ".md"
    return f"{homes.WORD_PHOTOS}/{name}"


def list_all(index: Index, entity: str) -> Anchors:
    """Every word-photo on disk (the files, not the index), newest name first."""
    home = index.home(entity)
    found = []
    for source, _ in home.sources():
        if source.kind != "anchor":
            continue
        try:
            text = home.path(source.path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        meta, _ = chunks.front_matter(text.splitlines())
        name = PurePosixPath(source.path)
        found.append(
            Anchor(
                name=name.name,
                path=source.path,
                title=str(meta.get("title") or name.stem),
                date=chunks.meta_date(meta),
                tags=chunks.meta_tags(meta),
            )
        )
    return Anchors(anchors=sorted(found, key=lambda a: a.path, reverse=True))


def delete(index: Index, entity: str, name: str) -> Deleted:
    """Delete one word-photo by its file name (with or without .md)."""
    if not name or "/" in name or "\\" in name or "\x00" in name or name in (".", ".."):
        raise InputError.of("name", "a word-photo's file name, as anchor_list gives it")
    if not name.endswith(homes.TEXT_SUFFIXES):
        name += ".md"
    home = index.home(entity)
    relative = f"{homes.WORD_PHOTOS}/{name}"
    try:
        path = home.resolve(relative, field="name")
    except NotFound:
        raise NotFound(f"no word-photo named {name!r}") from None
    path.unlink()
    index.sync_file(entity, relative)
    return Deleted(deleted=name)


def resync(index: Index, entity: str) -> Resynced:
    """Bring the index in step with the word_photos folder as it is on disk."""
    report = index.sync_dir(entity, homes.WORD_PHOTOS)
    return Resynced(**{k: getattr(report, k) for k in Resynced.model_fields})


def search_anchors(index: Index, entity: str, ask: AnchorSearch) -> SearchResponse:
    request = SearchRequest(query=ask.query, tiers="shortform", limit=ask.limit)
    return search(index, entity, request, kinds=("anchor",))
