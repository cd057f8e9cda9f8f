"""The shared-memory seed's store over one entity's memory: memory_search, memory_add,
memory_update, memory_forget and memory_stats, each chunk as `{id, text, metadata, score}`.

The store is everything search ranks for the entity, and the files stay the memory:
- A fragment, `.brain/fragments/<category>/<YYYY-MM>/<date>_<slug>.md`, is a memory of
  its own. Its id is its path inside the fragments folder
  (`manual/2026-11/2026-11-30_ship-the-beta.md`), its source is its category.
  memory_add writes one (source `manual` unless the metadata names another; Word
  Walker's store writes the same files), memory_update rewrites it in place, so the id
  is kept, and memory_forget deletes the file. Each is indexed before the call returns.
- Any other file chunk (word-photos, MEMORY.md, memory/, documents) has source
  `markdown` and the id `file:<path>#L<start>-L<end>`; a raw turn has source `sessions`
  and the id `turn:<event_uid>`. Both are found but never changed here: files are
  edited as files, and raw capture is permanent.
Every chunk's agent is the entity. An agent filter naming anyone else matches nothing,
as a filter on a value no chunk has would; an id is looked up in the entity's own home
only, so another entity's ids are never found.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import date, datetime
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel

from engine.search import chunks, homes
from engine.search.fragments import (
    CATEGORY_PATTERN,
    check_text,
    checked_tags,
    slug,
    with_front_matter,
)
from engine.search.homes import Home
from engine.search.hybrid import SearchRequest, SearchResult, search
from engine.search.index import Index
from engine.store import timestamps
from engine.store.errors import InputError, NotFound

SESSIONS = "sessions"
FILES = "markdown"
DEFAULT_SOURCE = "manual"
MAX_TOP_K = 100
MAX_IDS = 1000
SAMPLE = 5
MAX_METADATA_BYTES = 16 * 1024
# Front matter the store itself writes; the metadata names them differently or not at all.
_STORED = ("category", "date", "created_at")
_RESERVED = {
    "category": "use source",
    "date": "use timestamp",
    "created_at": "use timestamp",
    "id": "memory_add gives the id",
    "path": "memory_add chooses the path",
}
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
_FILE_KINDS = {"anchor": "note", "memory": "note", "document": "doc", "journal": "doc"}


class Memory(BaseModel):
    id: str
    text: str
    metadata: dict[str, Any]
    score: float


class Added(BaseModel):
    id: str
    path: str
    metadata: dict[str, Any]


class Updated(BaseModel):
    id: str
    changed: bool
    metadata: dict[str, Any]


class Forgotten(BaseModel):
    matched: int
    deleted: int
    dry_run: bool
    sample: list[dict[str, Any]]


class Stats(BaseModel):
    total: int
    by_agent: dict[str, int]
    by_source: dict[str, int]
    collection: str
    backend: str


def search_memories(
    index: Index,
    entity: str,
    query: str,
    top_k: int = 5,
    agent_filter: str | None = None,
    source_filter: str | None = None,
    since: str | None = None,
) -> list[Memory]:
    """The best `top_k` chunks for the query, filters applied before ranking (`since`
    to the day, then to the moment where a chunk has one)."""
    if not 1 <= top_k <= MAX_TOP_K:
        raise InputError.of("top_k", f"must be between 1 and {MAX_TOP_K}")
    moment = _moment("since", since) if since is not None else None
    kinds, category = _source_scope(index, source_filter, field="source_filter")
    request = SearchRequest(
        query=query,
        limit=min(MAX_TOP_K, 2 * top_k + 10),  # a long fragment may hold several chunks
        category=category,
        since=moment[:10] if moment else None,
    )
    if (agent_filter is not None and agent_filter != entity) or kinds == ():
        return []
    home = index.home(entity)
    memories: dict[str, Memory] = {}
    for result in search(index, entity, request, kinds=kinds).results:
        memory = _memory(home, entity, result)
        if memory is None or memory.id in memories:
            continue
        if moment and _before(memory.metadata.get("timestamp"), moment):
            continue
        memories[memory.id] = memory
        if len(memories) == top_k:
            break
    return list(memories.values())


def add(index: Index, entity: str, text: str, metadata: dict[str, Any] | None) -> Added:
    """Write a new fragment holding the text and its metadata, indexed at once."""
    text = check_text("text", text, index.settings.search_max_text_bytes)
    given = _checked_metadata(entity, metadata or {})
    source = given.pop("source", DEFAULT_SOURCE)
    _check_source(index, source, field="metadata.source")
    moment = given.pop("timestamp", None) or timestamps.now()
    header = {
        "category": source,
        "tags": given.pop("tags", []),
        "date": moment[:10],
        "created_at": moment,
        **{key: value for key, value in given.items() if value is not None},
    }
    folder = f"{homes.FRAGMENTS}/{source}/{moment[:7]}"
    home = index.home(entity)
    path = homes.write_new(
        home, folder, f"{moment[:10]}_{slug(text)}", with_front_matter(header, text)
    )
    index.sync_file(entity, path)
    return Added(id=_fragment_id(path), path=path, metadata=_metadata(entity, path, header))


def update(
    index: Index,
    entity: str,
    memory_id: str,
    text: str | None = None,
    metadata: dict[str, Any] | None = None,
    replace_metadata: bool = False,
) -> Updated:
    """Rewrite a fragment in place with new text and/or metadata (merged, or replacing
    what the caller set, when `replace_metadata`); the id is kept."""
    if text is None and metadata is None:
        raise InputError.of("text", "nothing to change: give text, metadata or both")
    home = index.home(entity)
    relative = _fragment_path(home, memory_id, field="id")
    header, body = _read(home, relative)
    new_body = (
        body if text is None else check_text("text", text, index.settings.search_max_text_bytes)
    )
    new_header = dict(header)
    if metadata is not None:
        given = _checked_metadata(entity, metadata)
        folder = _category(relative)
        if given.pop("source", folder) != folder:
            raise InputError.of(
                "metadata.source",
                f"is {folder!r}, the folder the memory lives in, and cannot change;"
                " memory_add it with the new source and memory_forget this one",
            )
        moment = given.pop("timestamp", None)
        kept = {key: header[key] for key in _STORED if key in header} | {"category": folder}
        if moment is not None:
            kept.update(date=moment[:10], created_at=moment)
        if replace_metadata:
            own = {"tags": given.pop("tags", [])}
        else:
            own = {key: value for key, value in header.items() if key not in _STORED}
            if "tags" in given:
                own["tags"] = given.pop("tags")
        for key, value in given.items():
            if value is None:
                own.pop(key, None)
            else:
                own[key] = value
        new_header = {**kept, **own}
    changed = new_header != header or new_body.rstrip() != body.rstrip()
    if changed:
        _rewrite(home, relative, with_front_matter(new_header, new_body))
        index.sync_file(entity, relative)
    return Updated(
        id=_fragment_id(relative), changed=changed, metadata=_metadata(entity, relative, new_header)
    )


def forget(
    index: Index,
    entity: str,
    ids: list[str] | None = None,
    agent_filter: str | None = None,
    source_filter: str | None = None,
    dry_run: bool = True,
    expect_count: int | None = None,
) -> Forgotten:
    """Delete fragments by id or by filter, with the seed's safety catches: a dry run
    unless asked otherwise; a call with no ids and no filter is refused; a delete by
    filter needs expect_count equal to what matched, and a wrong expect_count deletes
    nothing. Raw turns and other files are never deleted here."""
    if not ids and agent_filter is None and source_filter is None:
        raise InputError.of(
            "ids", "give ids, or agent_filter/source_filter: a call with neither is refused"
        )
    if expect_count is not None and expect_count < 0:
        raise InputError.of("expect_count", "must not be negative")
    home = index.home(entity)
    category = None
    if source_filter is not None:
        category = _forgettable_source(source_filter)
    if ids:
        if len(ids) > MAX_IDS:
            raise InputError.of("ids", f"{len(ids)} ids; at most {MAX_IDS} in one call")
        paths = _id_paths(home, ids)
    else:
        under = f"{homes.FRAGMENTS}/{category}" if category else homes.FRAGMENTS
        paths = [s.path for s, _ in home.sources(under=under) if _is_fragment(s)]
    if agent_filter is not None and agent_filter != entity:
        paths = []
    if category is not None:
        paths = [p for p in paths if _category(p) == category]
    paths = list(dict.fromkeys(paths))
    by_filter = not ids
    if expect_count is None and by_filter and not dry_run:
        raise InputError.of(
            "expect_count",
            f"required to delete by filter: this filter matches {len(paths)}; pass"
            f" expect_count={len(paths)} to delete them (nothing was deleted)",
        )
    if expect_count is not None and expect_count != len(paths) and not dry_run:
        raise InputError.of(
            "expect_count",
            f"is {expect_count} but {len(paths)} match; nothing was deleted",
        )
    sample = [_sample(home, entity, path) for path in paths[:SAMPLE]]
    deleted = 0
    if not dry_run:
        for path in paths:
            try:
                home.path(path).unlink()
                deleted += 1
            except FileNotFoundError:
                pass  # gone meanwhile: not deleted by this call
            index.sync_file(entity, path)
    return Forgotten(matched=len(paths), deleted=deleted, dry_run=dry_run, sample=sample)


def stats(index: Index, entity: str) -> Stats:
    """How many chunks search ranks for the entity, by source (from the index)."""
    rows = index.db.conn.execute(
        "SELECT CASE WHEN kind = 'turn' THEN ?"
        " WHEN kind = 'fragment' AND category IS NOT NULL THEN category ELSE ? END AS source,"
        " COUNT(*) FROM search_chunks WHERE entity = ? AND growth = 0"
        " GROUP BY source ORDER BY source",
        (SESSIONS, FILES, entity),
    ).fetchall()
    by_source = {row[0]: row[1] for row in rows}
    total = sum(by_source.values())
    return Stats(
        total=total,
        by_agent={entity: total},
        by_source=by_source,
        collection=entity,
        backend="pps",
    )


# --- ids, sources, metadata ------------------------------------------------------------


def _memory(home: Home, entity: str, result: SearchResult) -> Memory | None:
    common = {"text": result.text, "score": result.score}
    if result.kind == "turn":
        metadata = {
            "agent": entity,
            "source": SESSIONS,
            "kind": "transcript",
            "timestamp": result.created_at,
            "channel": result.channel,
            "author": result.author,
            "event_uid": result.event_uid,
        }
        return Memory(id=f"turn:{result.event_uid}", metadata=_present(metadata), **common)
    if result.path is None:
        return None
    if result.kind == "fragment" and _category(result.path):
        try:
            header, _ = _read(home, result.path)
        except (OSError, NotFound):
            return None
        return Memory(
            id=_fragment_id(result.path), metadata=_metadata(entity, result.path, header), **common
        )
    metadata = {
        "agent": entity,
        "source": FILES,
        "kind": _FILE_KINDS.get(result.kind, "note"),
        "timestamp": result.date,
        "path": result.path,
        "start_line": result.start_line,
        "end_line": result.end_line,
        "tags": result.tags,
    }
    file_id = f"file:{result.path}#L{result.start_line}-L{result.end_line}"
    return Memory(id=file_id, metadata=_present(metadata), **common)


def _metadata(entity: str, relative: str, header: dict) -> dict[str, Any]:
    """A fragment's metadata in the seed's shape: agent, source, kind, timestamp, tags,
    path, then whatever else its front matter holds."""
    own = {key: _plain(value) for key, value in header.items() if key not in _STORED}
    stamp = header.get("created_at") or header.get("date")
    return _present(
        {
            "agent": entity,
            "source": _category(relative),
            "kind": own.pop("kind", "note"),
            "timestamp": _plain(stamp),
            "tags": chunks.meta_tags(header),
            "path": relative,
            **{key: value for key, value in own.items() if key not in ("tags", "keywords")},
        }
    )


def _checked_metadata(entity: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """The caller's metadata, checked: keys the store owns refused, agent only the
    caller, source a category name, timestamp normalised, tags cleaned."""
    if not isinstance(metadata, dict):
        raise InputError.of("metadata", "must be an object of fields")
    try:
        size = len(json.dumps(metadata, ensure_ascii=False).encode())
    except (TypeError, ValueError):
        raise InputError.of("metadata", "must be plain JSON values") from None
    if size > MAX_METADATA_BYTES:
        raise InputError.of("metadata", f"{size} bytes; the maximum is {MAX_METADATA_BYTES}")
    given = dict(metadata)
    for key in given:
        if not _KEY.fullmatch(key):
            raise InputError.of(
                f"metadata.{key}", "a field name is 1-64 letters, digits, '_', '.' or '-'"
            )
        if key in _RESERVED:
            hint = _RESERVED[key]
            raise InputError.of(f"metadata.{key}", f"reserved; {hint}")
    agent = given.pop("agent", None)
    if agent is not None and agent != entity:
        raise InputError.of(
            "metadata.agent",
            f"every memory here is yours (agent {entity!r}); leave agent out or give your own",
        )
    if given.get("source") is not None:
        given["source"] = _source_name(given["source"], "metadata.source")
    else:
        given.pop("source", None)
    if given.get("timestamp") is not None:
        given["timestamp"] = _moment("metadata.timestamp", given["timestamp"])
    else:
        given.pop("timestamp", None)
    if "tags" in given:
        tags = given["tags"] if given["tags"] is not None else []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InputError.of("metadata.tags", "a list of strings")
        given["tags"] = checked_tags(tags, required=False)
    if "kind" in given and given["kind"] is not None and not isinstance(given["kind"], str):
        raise InputError.of("metadata.kind", "a word: note, doc, transcript, ...")
    return given


def _source_scope(
    index: Index, source: str | None, field: str
) -> tuple[tuple[str, ...] | None, str | None]:
    """(kinds, category) a search is limited to for a source; kinds () matches nothing."""
    if source is None:
        return None, None
    source = source.strip().lower()
    if source == SESSIONS:
        return ("turn",), None
    if source == FILES:
        return tuple(_FILE_KINDS), None
    name = _source_name(source, field)
    known = index.settings.fragment_categories
    if known and name not in known:
        return (), None
    return ("fragment",), name


def _forgettable_source(source: str) -> str:
    source = source.strip().lower()
    if source == SESSIONS:
        raise InputError.of(
            "source_filter", "sessions are your raw turns, kept permanently; they are never deleted"
        )
    if source == FILES:
        raise InputError.of(
            "source_filter",
            "markdown chunks are files in your home (word-photos, MEMORY.md, documents);"
            " edit or delete those files themselves",
        )
    return _source_name(source, "source_filter")


def _check_source(index: Index, source: str, field: str) -> None:
    known = index.settings.fragment_categories
    if known and source not in known:
        raise InputError.of(field, f"unknown source {source!r}; known: {', '.join(known)}")


def _source_name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(CATEGORY_PATTERN, value.strip().lower()):
        raise InputError.of(
            field, "a source is 1-64 characters of a-z, 0-9, '_' and '-', starting with a-z or 0-9"
        )
    name = value.strip().lower()
    if name in (SESSIONS, FILES):
        raise InputError.of(field, f"{name!r} is reserved for your raw turns and files")
    return name


def _moment(field: str, value: Any) -> str:
    try:
        return timestamps.normalise(value)
    except (TypeError, ValueError) as exc:
        raise InputError.of(field, str(exc)) from None


def _id_paths(home: Home, ids: list[str]) -> list[str]:
    """The fragment files of these ids; refuses ids of things that are not forgotten here,
    and fails (nothing deleted) if any id is unknown."""
    paths, missing = [], []
    for n, memory_id in enumerate(ids):
        try:
            paths.append(_fragment_path(home, memory_id, field=f"ids[{n}]"))
        except NotFound:
            missing.append(memory_id)
    if missing:
        raise NotFound(f"no memory with id {', '.join(map(repr, missing))}; nothing was deleted")
    return paths


def _fragment_path(home: Home, memory_id: Any, field: str) -> str:
    """The home-relative path of the fragment with this id, or InputError/NotFound."""
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise InputError.of(field, "empty; give an id from memory_search or memory_add")
    if memory_id.startswith("turn:"):
        raise InputError.of(
            field, f"{memory_id} is a raw turn: raw capture is permanent and is not changed here"
        )
    if memory_id.startswith("file:"):
        path = memory_id.removeprefix("file:").rsplit("#", 1)[0]
        raise InputError.of(
            field,
            f"{memory_id} is part of {path}, a file in your home: edit that file itself;"
            " memory_update and memory_forget change memories kept as fragments",
        )
    if PurePosixPath(memory_id.replace("\\", "/")).is_absolute() or memory_id.startswith("~"):
        raise InputError.of(
            field, "absolute paths are refused; give an id from memory_search or memory_add"
        )
    relative = f"{homes.FRAGMENTS}/{memory_id}"
    try:
        home.resolve(relative, field=field)
    except NotFound:
        raise NotFound(f"no memory with id {memory_id!r}") from None
    if not _category(relative) or not _is_fragment(home.classify(relative)):
        raise NotFound(f"no memory with id {memory_id!r}")
    return PurePosixPath(relative).as_posix()


def _is_fragment(source) -> bool:
    return source is not None and source.kind == "fragment" and source.category is not None


def _category(relative: str) -> str | None:
    """The category folder of a fragment path, or None outside one."""
    parts = PurePosixPath(relative).parts
    prefix = PurePosixPath(homes.FRAGMENTS).parts
    if len(parts) > len(prefix) + 1 and parts[: len(prefix)] == prefix:
        return parts[len(prefix)]
    return None


def _fragment_id(relative: str) -> str:
    return PurePosixPath(relative).relative_to(homes.FRAGMENTS).as_posix()


def _read(home: Home, relative: str) -> tuple[dict, str]:
    """A fragment's front matter and body, from the file."""
    text = home.resolve(relative).read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    header, start = chunks.front_matter(lines)
    return header, "\n".join(lines[start:]).strip("\n")


def _sample(home: Home, entity: str, relative: str) -> dict[str, Any]:
    try:
        header, body = _read(home, relative)
    except (OSError, NotFound):
        header, body = {}, ""
    preview = body if len(body) <= 200 else body[:200].rstrip() + " …"
    return {
        "id": _fragment_id(relative),
        "text": preview,
        "metadata": _metadata(entity, relative, header),
    }


def _rewrite(home: Home, relative: str, text: str) -> None:
    """Replace a file's content at once: written whole (0600, flushed) under a hidden
    name the index ignores, then renamed over the file."""
    folder = PurePosixPath(relative).parent.as_posix()
    written = homes.write_new(home, folder, f".rewrite-{uuid.uuid4().hex}", text)
    home.path(written).replace(home.path(relative))


def _before(stamp: Any, moment: str) -> bool:
    """Whether a chunk's own moment is before `moment`; a chunk dated by its day only
    (a file) was already kept or dropped by the search's day filter."""
    if not isinstance(stamp, str) or len(stamp) <= 10:
        return False
    try:
        return timestamps.normalise(stamp) < moment
    except ValueError:
        return False


def _plain(value: Any) -> Any:
    """Front matter as JSON: YAML dates and times become ISO strings."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}
