"""The shared-memory seed's five tools over a shared store (engine/contracts/stores.py):
memory_search, memory_add, memory_update, memory_forget and memory_stats, each memory
as `{id, text, metadata, score}`, and the seed's folder indexer.

Every memory of a store is a fragment file in the store's home,
`.brain/fragments/<source>/<YYYY-MM>/<date>_<slug>.md`; its id is its path inside the
fragments folder (`manual/2026-11/2026-11-30_ship-the-beta.md`), its source its category
folder. memory_add writes one, memory_update rewrites it in place (the id is kept),
memory_forget deletes it; each is indexed before the call returns, and search ranks the
store exactly as it ranks an entity's memory (engine/search/hybrid.py).

Who wrote a memory is recorded in the database from the caller's token
(`shared_memories.written_by`): no metadata can set or change it, and it is what
agent_filter chooses and by_agent counts, so no member can make its memory pass for
another's. `metadata.agent` is a label the caller may set (default: its own name), as
the seed's indexer labels its chunks `notes`; it is kept and answered as metadata only.
A member changes and deletes only what it wrote, unless the store was created with
--members-edit. The same text added again by the same writer to the same store is not
stored twice: memory_add answers with the memory already there (`duplicate`). The folder
indexer writes as the operator, under source `markdown` (which members cannot use), one
memory per file, `markdown/<agent>/<path in the folder>`. What metadata a caller may set,
and the shape it is answered in, is engine/contracts/shared_metadata.py's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, Field

from engine.contracts import shared_metadata, stores
from engine.contracts.stores import Access
from engine.kernel import timestamps
from engine.kernel.errors import Forbidden, InputError, NotFound
from engine.kernel.requests import Request
from engine.search import chunks, homes
from engine.search.fragments import (
    check_text,
    slug,
    with_front_matter,
)
from engine.search.homes import Home
from engine.search.hybrid import Query, SearchRequest, search
from engine.search.index import Index

FOLDER_SOURCE = "markdown"
DEFAULT_SOURCE = "manual"
MAX_TOP_K = 100
MAX_IDS = 1000
SAMPLE = 5
_SUFFIXES = (".md", ".markdown")


# --- requests (the MCP tools' arguments and the REST bodies) ----------------------------


class SearchIn(Request):
    query: Query = Field(description="What you want to recall, in words.")
    top_k: int = Field(5, description="How many memories, 1-100.")
    agent_filter: str | None = Field(
        None, description="Only memories this member wrote (metadata.written_by)."
    )
    source_filter: str | None = Field(
        None, description="Only memories of this source (metadata.source): manual, markdown, ..."
    )
    since: str | None = Field(None, description="ISO timestamp or date: only from then on.")


class AddIn(Request):
    text: str = Field(description="The memory, markdown; write it findable.")
    metadata: dict[str, Any] | None = Field(
        None,
        description="Optional fields kept with it: agent (a label, default your name), source"
        " (its bucket, default manual), timestamp (ISO, default now), tags (a list), kind"
        " (note, doc, ...), superseded (true ranks it lower), and any others you want back."
        " written_by is recorded from your token, never given.",
    )


class UpdateIn(Request):
    id: str = Field(description="The memory's id, from memory_search or memory_add.")
    text: str | None = Field(
        None, description="New text (its embedding is recomputed); leave out to keep the text."
    )
    metadata: dict[str, Any] | None = Field(
        None,
        description="Fields to change (merged unless replace_metadata; a field set to null is"
        " removed); source cannot change.",
    )
    replace_metadata: bool = Field(False, description="Replace the fields wholesale.")


class ForgetIn(Request):
    ids: list[str] | None = Field(None, description="Memories to delete.")
    agent_filter: str | None = Field(
        None, description="Everything this member wrote (metadata.written_by)."
    )
    source_filter: str | None = Field(None, description="Everything of this source.")
    dry_run: bool = Field(True, description="True (default): only report what would go.")
    expect_count: int | None = Field(
        None,
        ge=0,
        le=2**53,
        description="Required to delete by filter with dry_run false: the number of matches.",
    )


# --- answers --------------------------------------------------------------------------


class Memory(BaseModel):
    id: str
    text: str
    metadata: dict[str, Any]
    score: float


class Added(BaseModel):
    id: str
    metadata: dict[str, Any]
    duplicate: bool = Field(
        False,
        description="true: the writer had added this text to the store already; that"
        " memory is the answer, unchanged, and nothing was stored.",
    )


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
    members_edit: bool
    members: list[str]


class Indexed(BaseModel):
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0


# --- the five tools -------------------------------------------------------------------


def search_memories(index: Index, access: Access, ask: SearchIn) -> list[Memory]:
    """The best `top_k` memories for the query. The filters (the writer, source, since
    to the moment) choose the memories before ranking, so a narrow window on a large
    store still returns the matches inside it."""
    if not 1 <= ask.top_k <= MAX_TOP_K:
        raise InputError.of("top_k", f"must be between 1 and {MAX_TOP_K}")
    moment = shared_metadata.moment("since", ask.since) if ask.since is not None else None
    source = (
        shared_metadata.source_name(ask.source_filter, "source_filter")
        if ask.source_filter
        else None
    )
    request = SearchRequest(
        query=ask.query,
        tiers="shortform",
        limit=min(MAX_TOP_K, 2 * ask.top_k + 10),  # a long memory may hold several chunks
    )
    files = None
    if ask.agent_filter is not None or source is not None or moment is not None:
        chosen = _records(index, access.store, ask.agent_filter, source, moment)
        if not chosen:
            return []
        files = [_path(memory_id) for memory_id in chosen]
    results = search(index, access.key, request, kinds=("fragment",), files=files).results
    records = _records(index, access.store, ids=[_id(r.path) for r in results if r.path])
    home = index.home(access.key)
    memories: dict[str, Memory] = {}
    for result in results:
        if not result.path:
            continue  # no file, so no memory of the store
        memory_id = _id(result.path)
        record = records.get(memory_id)
        if record is None or memory_id in memories:
            continue  # a file no memory of the store is (put there by hand): not shown
        try:
            header, _ = _read(home, _path(memory_id))
        except (OSError, NotFound):
            continue
        metadata = shared_metadata.answer(record, header)
        memories[memory_id] = Memory(
            id=memory_id, text=result.text, metadata=metadata, score=result.score
        )
        if len(memories) == ask.top_k:
            break
    return list(memories.values())


def add(index: Index, access: Access, new: AddIn) -> Added:
    """Write a new fragment holding the text and its metadata, recorded as the caller's,
    indexed at once; or, when the caller has added the same text to this store already,
    answer with that memory (`duplicate`), changing nothing."""
    text = check_text("text", new.text, index.settings.search_max_text_bytes)
    given = shared_metadata.checked(new.metadata or {})
    agent = given.pop("agent", None) or access.caller
    source = given.pop("source", DEFAULT_SOURCE)
    if source == FOLDER_SOURCE:
        raise InputError.of(
            "metadata.source", f"{FOLDER_SOURCE!r} is the folder indexer's; choose another"
        )
    _check_source(index, source, field="metadata.source")
    moment = given.pop("timestamp", None) or timestamps.now()
    header = {
        "category": source,
        "tags": given.pop("tags", []),
        "date": moment[:10],
        "created_at": moment,
        **{key: value for key, value in given.items() if value is not None},
    }
    home = index.home(access.key)
    digest = _text_hash(text)
    with _adding:  # one add at a time looks for the text and stores it (one server a data dir)
        _hash_older(index, access, home)
        existing = _records(index, access.store, writer=access.caller, text_hash=digest)
        for record in existing.values():
            with contextlib.suppress(OSError, NotFound):
                stored, _ = _read(home, _path(record["id"]))
                return Added(
                    id=record["id"], metadata=shared_metadata.answer(record, stored), duplicate=True
                )
        folder = f"{homes.FRAGMENTS}/{source}/{moment[:7]}"
        path = homes.write_new(
            home, folder, f"{moment[:10]}_{slug(text)}", with_front_matter(header, text)
        )
        record = _record_new(access, _id(path), agent, source, moment, digest)
        _save(index, access.store, record)
    index.sync_file(access.key, path)
    return Added(id=record["id"], metadata=shared_metadata.answer(record, header))


def update(index: Index, access: Access, change: UpdateIn) -> Updated:
    """Rewrite a memory in place with new text and/or metadata (merged, or replacing
    what callers set, when `replace_metadata`); the id and the writer are kept."""
    if change.text is None and change.metadata is None:
        raise InputError.of("text", "nothing to change: give text, metadata or both")
    record = _changeable(index, access, [change.id], field="id")[0]
    memory_id = record["id"]
    home = index.home(access.key)
    relative = _path(memory_id)
    header, body = _read(home, relative)
    new_body = (
        body
        if change.text is None
        else check_text("text", change.text, index.settings.search_max_text_bytes)
    )
    new_header, new_record = dict(header), dict(record)
    if change.metadata is not None:
        given = shared_metadata.checked(change.metadata)
        folder = record["source"]
        if given.pop("source", folder) != folder:
            raise InputError.of(
                "metadata.source",
                f"is {folder!r}, the folder the memory lives in, and cannot change;"
                " memory_add it with the new source and memory_forget this one",
            )
        agent = given.pop("agent", None)
        if agent is not None:
            new_record["agent"] = agent
        moment = given.pop("timestamp", None)
        kept = {key: header[key] for key in shared_metadata.STORED if key in header}
        kept["category"] = folder
        if moment is not None:
            kept.update(date=moment[:10], created_at=moment)
            new_record["moment"] = moment
        if change.replace_metadata:
            own = {"tags": given.pop("tags", [])}
        else:
            own = {key: value for key, value in header.items() if key not in shared_metadata.STORED}
            if "tags" in given:
                own["tags"] = given.pop("tags")
        for key, value in given.items():
            if value is None:
                own.pop(key, None)
            else:
                own[key] = value
        new_header = {**kept, **own}
    changed = (
        new_header != header
        or new_body.rstrip() != body.rstrip()
        or (new_record["agent"], new_record["moment"]) != (record["agent"], record["moment"])
    )
    if changed:
        _rewrite(home, relative, with_front_matter(new_header, new_body))
        new_record.update(updated_at=timestamps.now(), updated_by=access.caller)
        if change.text is not None:
            new_record["text_hash"] = _text_hash(new_body)
        _save(index, access.store, new_record)
        index.sync_file(access.key, relative)
    return Updated(
        id=memory_id, changed=changed, metadata=shared_metadata.answer(new_record, new_header)
    )


def forget(index: Index, access: Access, ask: ForgetIn) -> Forgotten:
    """Delete memories by id or by filter, with the seed's safety catches: a dry run
    unless asked otherwise; a call with no ids and no filter is refused; a delete by
    filter needs expect_count equal to what matched, and a wrong expect_count deletes
    nothing. An id another member wrote is refused (nothing deleted); a filter matches
    only the memories the caller may delete (every one with --members-edit)."""
    ids = ask.ids
    if not ids and ask.agent_filter is None and ask.source_filter is None:
        raise InputError.of(
            "ids", "give ids, or agent_filter/source_filter: a call with neither is refused"
        )
    if ask.expect_count is not None and ask.expect_count < 0:
        raise InputError.of("expect_count", "must not be negative")
    source = (
        shared_metadata.source_name(ask.source_filter, "source_filter")
        if ask.source_filter
        else None
    )
    if ids:
        if len(ids) > MAX_IDS:
            raise InputError.of("ids", f"{len(ids)} ids; at most {MAX_IDS} in one call")
        found = _changeable(index, access, ids, field="ids")
        found = [
            r
            for r in found
            if (ask.agent_filter is None or r["written_by"] == ask.agent_filter)
            and (source is None or r["source"] == source)
        ]
    else:
        chosen = _records(index, access.store, ask.agent_filter, source)
        found = [r for r in chosen.values() if access.may_change(r["written_by"])]
    found = list({r["id"]: r for r in found}.values())
    by_filter = not ids
    if ask.expect_count is None and by_filter and not ask.dry_run:
        raise InputError.of(
            "expect_count",
            f"required to delete by filter: this filter matches {len(found)}; pass"
            f" expect_count={len(found)} to delete them (nothing was deleted)",
        )
    if ask.expect_count is not None and ask.expect_count != len(found) and not ask.dry_run:
        raise InputError.of(
            "expect_count", f"is {ask.expect_count} but {len(found)} match; nothing was deleted"
        )
    home = index.home(access.key)
    sample = [_sample(home, record) for record in found[:SAMPLE]]
    deleted = 0
    if not ask.dry_run:
        for record in found:
            deleted += _delete(index, access, record)
    return Forgotten(matched=len(found), deleted=deleted, dry_run=ask.dry_run, sample=sample)


def stats(index: Index, access: Access) -> Stats:
    """How many memories the store holds, by writer (`by_agent`: the member, or the
    operator, whose token wrote them) and by source; its members and whether they may
    change each other's memories."""
    conn = index.db.conn

    def counts(column: str) -> dict[str, int]:
        rows = conn.execute(
            f"SELECT {column}, COUNT(*) FROM shared_memories WHERE store = ?"
            f" GROUP BY {column} ORDER BY {column}",
            (access.store,),
        )
        return {row[0]: row[1] for row in rows}

    by_agent = counts("written_by")
    store = stores.get(index.db, access.store)
    return Stats(
        total=sum(by_agent.values()),
        by_agent=by_agent,
        by_source=counts("source"),
        collection=access.store,
        backend="pps",
        members_edit=store.members_edit,
        members=store.members,
    )


# --- the folder indexer ---------------------------------------------------------------


def index_folder(index: Index, access: Access, folder: Path, agent: str) -> Indexed:
    """`pps shared index DIR --store S --agent LABEL`: each markdown file of the folder
    as one memory written by the operator, id `markdown/<agent>/<path in the folder>`.
    Re-runnable: unchanged files are skipped, changed ones rewritten in place, and the
    memories of files gone from the folder (for the same label) removed."""
    agent = shared_metadata.agent_label(agent, "agent")
    folder = folder.expanduser()
    if not folder.is_dir():
        raise NotFound(f"no folder {folder}", field="dir")
    report = Indexed()
    home = index.home(access.key)
    seen: set[str] = set()
    for directory, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            full = Path(directory) / name
            if name.startswith(".") or not name.endswith(_SUFFIXES) or not full.is_file():
                continue
            origin = full.relative_to(folder).as_posix()
            memory_id = f"{FOLDER_SOURCE}/{agent}/{origin}"
            seen.add(memory_id)
            raw = full.read_bytes()
            digest = hashlib.sha256(raw).hexdigest()
            record = _records(index, access.store, ids=[memory_id]).get(memory_id)
            if record is not None and record["origin_hash"] == digest:
                report.unchanged += 1
                continue
            moment = timestamps.normalise(full.stat().st_mtime)
            header = {"category": FOLDER_SOURCE, "tags": [], "date": moment[:10]}
            header["created_at"] = moment
            header["title"] = origin
            text = raw.decode("utf-8", errors="replace")
            body = "\n".join(text.splitlines()[chunks.front_matter(text.splitlines())[1] :])
            _rewrite(home, _path(memory_id), with_front_matter(header, body or origin))
            new = _record_new(access, memory_id, agent, FOLDER_SOURCE, moment)
            if record is not None:
                new["created_at"] = record["created_at"]
            _save(index, access.store, {**new, "origin": origin, "origin_hash": digest})
            index.sync_file(access.key, _path(memory_id))
            if record is None:
                report.added += 1
            else:
                report.updated += 1
    gone = index.db.conn.execute(
        "SELECT * FROM shared_memories WHERE store = ? AND agent = ? AND written_by = ?"
        " AND origin IS NOT NULL",
        (access.store, agent, stores.OPERATOR),
    ).fetchall()
    for record in gone:
        if record["id"] not in seen:
            report.removed += _delete(index, access, dict(record))
    return report


# --- records, ids, metadata -----------------------------------------------------------


def _records(
    index: Index,
    store: str,
    writer: str | None = None,
    source: str | None = None,
    since: str | None = None,
    ids: list[str] | None = None,
    text_hash: str | None = None,
) -> dict[str, dict]:
    clauses, params = ["store = ?"], [store]
    for column, value in (("written_by", writer), ("source", source), ("text_hash", text_hash)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if since is not None:
        clauses.append("moment >= ?")
        params.append(since)
    if ids is not None:
        clauses.append("id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(ids))
    rows = index.db.conn.execute(
        f"SELECT * FROM shared_memories WHERE {' AND '.join(clauses)} ORDER BY moment, id",
        params,
    )
    return {row["id"]: dict(row) for row in rows}


def _record_new(
    access: Access,
    memory_id: str,
    agent: str,
    source: str,
    moment: str,
    text_hash: str | None = None,
) -> dict:
    now = timestamps.now()
    return {
        "id": memory_id,
        "agent": agent,
        "written_by": access.caller,
        "source": source,
        "moment": moment,
        "origin": None,
        "origin_hash": None,
        "created_at": now,
        "updated_at": now,
        "updated_by": access.caller,
        "text_hash": text_hash,
    }


_adding = threading.Lock()


def _text_hash(text: str) -> str:
    """What makes two memories the same text: their text without the blank lines and
    spaces around it."""
    return hashlib.sha256(text.strip().encode()).hexdigest()


def _hash_older(index: Index, access: Access, home: Home) -> None:
    """Hash the texts of the caller's memories stored before texts were hashed (migration
    0070), once, so they are matched too; a file that cannot be read gets an empty hash,
    which no text has."""
    rows = index.db.conn.execute(
        "SELECT id FROM shared_memories WHERE store = ? AND written_by = ?"
        " AND text_hash IS NULL AND origin IS NULL",
        (access.store, access.caller),
    ).fetchall()
    for row in rows:
        try:
            digest = _text_hash(_read(home, _path(row["id"]))[1])
        except (OSError, NotFound):
            digest = ""
        with index.db.write() as conn:
            conn.execute(
                "UPDATE shared_memories SET text_hash = ? WHERE store = ? AND id = ?",
                (digest, access.store, row["id"]),
            )


def _save(index: Index, store: str, record: dict) -> None:
    columns = ["store", *record]
    with index.db.write() as conn:
        conn.execute(
            f"INSERT OR REPLACE INTO shared_memories ({', '.join(columns)})"
            f" VALUES ({', '.join('?' * len(columns))})",
            [store, *record.values()],
        )


def _delete(index: Index, access: Access, record: dict) -> int:
    """Delete a memory's file and record; 1 if this call deleted it."""
    relative = _path(record["id"])
    with index.db.write() as conn:
        gone = conn.execute(
            "DELETE FROM shared_memories WHERE store = ? AND id = ?", (access.store, record["id"])
        ).rowcount
    with contextlib.suppress(FileNotFoundError):
        index.home(access.key).path(relative).unlink()
    index.sync_file(access.key, relative)
    return gone


def _changeable(index: Index, access: Access, ids: list[str], field: str) -> list[dict]:
    """The records of these ids, all of them the caller's to change; NotFound for any
    unknown (nothing changed), Forbidden for any another member wrote."""
    for n, memory_id in enumerate(ids):
        if not isinstance(memory_id, str) or not memory_id.strip():
            name = field if len(ids) == 1 and field == "id" else f"{field}[{n}]"
            raise InputError.of(name, "empty; give an id from memory_search or memory_add")
    found = _records(index, access.store, ids=ids)
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(
            f"no memory with id {', '.join(map(repr, missing))} in this store; nothing changed",
            field=field,
        )
    theirs = [r for r in found.values() if not access.may_change(r["written_by"])]
    if theirs:
        names = ", ".join(f"{r['id']!r} (written by {r['written_by']})" for r in theirs)
        raise Forbidden(
            f"{names}: only its writer changes or deletes a memory in this store"
            " (an operator can create a store with --members-edit); nothing changed",
            field=field,
        )
    return [found[i] for i in dict.fromkeys(ids)]


def _check_source(index: Index, source: str, field: str) -> None:
    known = index.settings.fragment_categories
    if known and source not in known:
        raise InputError.of(field, f"unknown source {source!r}; known: {', '.join(known)}")


def _path(memory_id: str) -> str:
    return f"{homes.FRAGMENTS}/{memory_id}"


def _id(relative: str) -> str:
    return PurePosixPath(relative).relative_to(homes.FRAGMENTS).as_posix()


def _read(home: Home, relative: str) -> tuple[dict, str]:
    """A fragment's front matter and body, from the file."""
    text = home.resolve(relative).read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    header, start = chunks.front_matter(lines)
    return header, "\n".join(lines[start:]).strip("\n")


def _sample(home: Home, record: dict) -> dict[str, Any]:
    try:
        header, body = _read(home, _path(record["id"]))
    except (OSError, NotFound):
        header, body = {}, ""
    preview = body if len(body) <= 200 else body[:200].rstrip() + " …"
    return {"id": record["id"], "text": preview, "metadata": shared_metadata.answer(record, header)}


def _rewrite(home: Home, relative: str, text: str) -> None:
    """Write a file's content at once: whole (0600, flushed) under a hidden name the
    index ignores, then renamed over the file."""
    folder = PurePosixPath(relative).parent.as_posix()
    written = homes.write_new(home, folder, f".rewrite-{uuid.uuid4().hex}", text)
    home.path(written).replace(home.path(relative))


# Asked by memories:


def listed(index: Index, access: Access, limit: int = 200) -> list[Memory]:
    """The store's memories as its members see them, newest first, each with its text and
    who wrote it (metadata `agent`); no ranking, so every score is 0. A record whose file
    is gone is left out."""
    records = sorted(
        _records(index, access.store).values(),
        key=lambda r: (r["moment"], r["id"]),
        reverse=True,
    )
    home = index.home(access.key)
    found = []
    for record in records[:limit]:
        try:
            header, body = _read(home, _path(record["id"]))
        except (OSError, NotFound):
            continue
        metadata = shared_metadata.answer(record, header)
        found.append(Memory(id=record["id"], text=body, metadata=metadata, score=0.0))
    return found
