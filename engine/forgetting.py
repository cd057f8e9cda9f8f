"""Forgetting: one operation that takes an event, a word-photo or a fact out of every layer
(REST `POST /v1/forget`, the `forget` tool, `pps forget`, the memories and around
pages), and answers with a receipt of what went from where. The same path serves the
versions an edit supersedes and the messages a client deletes (a capture listener).

For an event (every version of its message: the original, its edits, the deletions
naming it):
- layer 1 keeps tombstones: the rows stay (who said it, where, when, what an edit or a
  deletion names), their text and metadata emptied (engine.capture.versions.blank); the
  `forgotten` table says who asked, when and why, with the receipt. Never the text;
- layer 2: its search rows and vectors (engine.search.turns.forget);
- layer 3: every episode holding it is withdrawn; the graph removes it with the facts only
  it supported (a `graph_forget` job: the graph may be down, and it is retried until it is
  done), and the episode's other turns are extracted again as an episode of their own
  (engine.graph.episodes.withdraw);
- layer 4: summaries covering it are deleted, their other turns unsummarized again, and a
  summary is written anew at once when an LLM is configured (else by the agent's
  summarize_messages); crystals, word-photos and memory files that quote it
  (engine.kernel.quotes: the text whole, or six of its words in a row) have each quote
  replaced by `[forgotten]`;
- the recall log: items that came from it (or from a summary or file it left), or hold its
  text, are blanked; contexts that hold it have it replaced.
A word-photo is deleted (file and index) and its recall log copies blanked; a fact is
deleted from the graph (503 while the graph is down) and its copies blanked: its events
stay, so a replay of the graph may extract it again; forget the events to forget it for
good. Backups and exports taken before a forget keep what they held (docs/backup.md).

`check` (part of `pps check`) verifies, for each tombstone of an event, that no layer holds
it any more: no text in layer 1, no search row, no episode, no summary over it.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.capture import events as capture
from engine.capture import versions
from engine.crystal import summaries, summarize
from engine.graph import episodes, texture
from engine.kernel import timestamps
from engine.kernel.errors import NotFound
from engine.kernel.patterns import EVENT_UID_PATTERN
from engine.kernel.quotes import Quotes
from engine.kernel.requests import Request
from engine.recall import log as recall_log
from engine.search import anchors, homes, turns
from engine.search.index import Index
from engine.store import queue
from engine.store.check import Findings
from engine.store.db import Database

log = logging.getLogger("pps.forgetting")

SCRUBBED = ("events_fts", "search_fts", "summaries_fts")
"""The full-text indexes a forgotten event's words were in (engine.store.db.scrub)."""
SCRUB_JOB = "scrub"
"""A `scrub` of the database, queued by what forgets inside another's transaction."""

Kind = Literal["event", "word_photo", "fact"]
Layer = Literal["raw", "search", "graph", "summaries", "files", "word_photos", "recall_log"]


_NAMED = ("event_uid", "word_photo", "fact")


class ForgetRequest(Request):
    """What to forget: exactly one of an event, a word-photo or a fact."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": [name], "properties": {name: {"type": "string"}}} for name in _NAMED
            ]
        }
    )

    event_uid: str | None = Field(
        None, pattern=EVENT_UID_PATTERN, description="An event (every version of its message)."
    )
    word_photo: str | None = Field(
        None, min_length=1, max_length=255, description="A word-photo's file name."
    )
    fact: str | None = Field(
        None, min_length=1, max_length=64, description="A fact's uuid (texture_search's)."
    )
    why: str | None = Field(
        None, max_length=500, description="Kept in the tombstone (never the text forgotten)."
    )

    @model_validator(mode="after")
    def _one(self) -> ForgetRequest:
        given = [name for name in _NAMED if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of event_uid, word_photo and fact")
        return self


class Removed(BaseModel):
    layer: Layer
    count: int = Field(description="How many rows, files or items went from the layer.")
    detail: str


class Receipt(BaseModel):
    id: int = Field(description="The tombstone's id.")
    forgotten: Kind
    ref: str = Field(description="The event's uid, the fact's uuid, or the word-photo's hash.")
    at: str
    why: str | None
    asked_by: str
    removed: list[Removed]
    pending: list[str] = Field(
        default_factory=list, description="What is still being done, in the background."
    )


class Tombstones(BaseModel):
    tombstones: list[Receipt]


def forget(index: Index, graph, entity: str, ask: ForgetRequest, asked_by: str) -> Receipt:
    """Forget what `ask` names from every layer of the entity (`graph`: the Graph, or
    None when none is configured); the receipt says what went from where. An event,
    word-photo or fact the entity does not have is NotFound."""
    if ask.event_uid is not None:
        return _forget_event(index, entity, ask.event_uid, ask.why, asked_by)
    if ask.word_photo is not None:
        return _forget_word_photo(index, entity, ask.word_photo, ask.why, asked_by)
    assert ask.fact is not None
    return _forget_fact(index.db, graph, entity, ask.fact, ask.why, asked_by)


def _forget_event(index: Index, entity: str, uid: str, why: str | None, asked_by: str) -> Receipt:
    db = index.db
    ids = versions.versions_of(db.conn, entity, uid)
    if not ids:
        raise NotFound(f"no event {uid!r}", "event_uid")
    said = versions.texts(db.conn, entity, ids)
    files, cut = _unquote_files(index, entity, said)
    with db.write() as conn:
        removed, pending = _withdraw(conn, entity, ids, said, blank=True, paths=cut)
        if _count(removed, "summaries") and index.settings.llm_provider != "none":
            queue.enqueue(conn, entity, summarize.JOB_KIND, f"rewrite:{timestamps.now()}", {})
            pending.append("summaries: written again by the LLM (queued)")
        original = versions.originals(conn, entity, ids)[0]
        receipt = _tombstone(
            conn, entity, "event", original, why, asked_by, [*removed, files], pending
        )
    if not db.scrub(SCRUBBED):
        log.warning(
            "a reader kept the WAL from being emptied after a forget: its old pages are"
            " written over as the database is used"
        )
    return receipt


def superseded(batch: capture.Captured) -> None:
    """A capture listener (in the batch's transaction, capture having marked what its
    edits and deletions changed): the versions an edit replaced leave search, the graph
    and the summaries; a message a client deleted is forgotten, as `forget` would (its
    tombstone names the channel that deleted it)."""
    conn, entity, gone = batch.conn, batch.entity, list(batch.superseded)
    if not gone:
        return
    deleted = versions.deleted_among(conn, entity, gone)
    edited = [i for i in gone if i not in deleted]
    if edited:
        _withdraw(conn, entity, edited, versions.texts(conn, entity, edited), blank=False)
    for original in versions.originals(conn, entity, deleted):
        ids = versions.versions_of(conn, entity, original)
        said = versions.texts(conn, entity, ids)
        removed, pending = _withdraw(conn, entity, ids, said, blank=True)
        by = versions.deleted_in(conn, entity, original) or "capture"
        _tombstone(conn, entity, "event", original, f"deleted in {by}", by, removed, pending)
        queue.enqueue(conn, entity, SCRUB_JOB, f"{original}:{timestamps.now()}", {})


def _withdraw(
    conn: sqlite3.Connection,
    entity: str,
    ids: list[int],
    said: list[str],
    *,
    blank: bool,
    paths: frozenset[str] = frozenset(),
) -> tuple[list[Removed], list[str]]:
    """Take these events out of every layer in the caller's transaction (with `blank`
    their text too, and the recall log's copies, of the files in `paths` too): what went
    from each layer, and what goes on in the background. `said`: their texts."""
    uids = versions.uids(conn, entity, ids)
    placed = versions.placed(conn, entity, ids)
    if blank:
        versions.blank(conn, entity, ids, timestamps.now())
    rows = turns.forget(conn, entity, ids, said)
    graph = episodes.withdraw(conn, entity, ids)
    gone_summaries = summaries.withdraw(conn, entity, placed)
    blanked = 0
    if blank:  # an edit leaves the recall log as it was: what was recalled then, was
        gone = recall_log.Gone(
            uids, set(ids), summaries=set(gone_summaries), paths=set(paths), said=said
        )
        blanked = recall_log.blank(conn, entity, gone)
    pending = []
    if graph.episodes:
        pending.append(f"graph: {len(graph.episodes)} episode(s) being removed (graph_forget)")
    if graph.again:
        pending.append(f"graph: {len(graph.again)} episode(s) of the other turns extracted anew")
    removed = [
        Removed(
            layer="raw",
            count=len(ids) if blank else 0,
            detail="versions kept as tombstones, their text emptied",
        ),
        Removed(layer="search", count=rows, detail="search rows and their vectors"),
        Removed(
            layer="graph",
            count=len(graph.episodes) + graph.pending,
            detail="episodes holding it withdrawn, and turns waiting for a window",
        ),
        Removed(
            layer="summaries",
            count=len(gone_summaries),
            detail="summaries covering it deleted; their other turns unsummarized again",
        ),
        Removed(layer="recall_log", count=blanked, detail="entries with a copy blanked"),
    ]
    return removed, pending


def _count(removed: list[Removed], layer: Layer) -> int:
    return sum(r.count for r in removed if r.layer == layer)


def _forget_word_photo(
    index: Index, entity: str, name: str, why: str | None, asked_by: str
) -> Receipt:
    _, text = anchors.get(index, entity, name)
    deleted = anchors.delete(index, entity, name).deleted
    relative = f"{homes.WORD_PHOTOS}/{deleted}"
    with index.db.write() as conn:
        blanked = recall_log.blank(conn, entity, recall_log.Gone(paths={relative}, said=[text]))
        removed = [
            Removed(layer="word_photos", count=1, detail="the file and its search rows"),
            Removed(layer="recall_log", count=blanked, detail="entries with a copy blanked"),
        ]
        ref = "sha256:" + hashlib.sha256(deleted.encode()).hexdigest()[:16]
        return _tombstone(conn, entity, "word_photo", ref, why, asked_by, removed)


def _forget_fact(
    db: Database, graph, entity: str, uuid: str, why: str | None, asked_by: str
) -> Receipt:
    texture.delete(graph, db, entity, uuid, kinds=("fact",))
    with db.write() as conn:
        blanked = recall_log.blank(conn, entity, recall_log.Gone(facts={uuid}))
        removed = [
            Removed(layer="graph", count=1, detail="the fact; the events it came from stay"),
            Removed(layer="recall_log", count=blanked, detail="entries with a copy blanked"),
        ]
        return _tombstone(conn, entity, "fact", uuid, why, asked_by, removed)


def _tombstone(
    conn: sqlite3.Connection,
    entity: str,
    kind: Kind,
    ref: str,
    why: str | None,
    asked_by: str,
    removed: list[Removed],
    pending: list[str] | None = None,
) -> Receipt:
    """Keep the tombstone, with its receipt (in the caller's transaction)."""
    at = timestamps.now()
    (number,) = conn.execute(
        "INSERT INTO forgotten (entity, kind, ref, why, asked_by, at, receipt)"
        " VALUES (?, ?, ?, ?, ?, ?, '{}') RETURNING id",
        (entity, kind, ref, why, asked_by, at),
    ).fetchone()
    receipt = Receipt(
        id=number,
        forgotten=kind,
        ref=ref,
        at=at,
        why=why,
        asked_by=asked_by,
        removed=removed,
        pending=pending or [],
    )
    conn.execute(
        "UPDATE forgotten SET receipt = ? WHERE id = ?", (receipt.model_dump_json(), number)
    )
    return receipt


def tombstones(db: Database, entity: str, limit: int = 100) -> Tombstones:
    """The entity's tombstones, newest first, each with its receipt."""
    rows = db.conn.execute(
        "SELECT receipt FROM forgotten WHERE entity = ? ORDER BY id DESC LIMIT ?",
        (entity, limit),
    )
    return Tombstones(tombstones=[Receipt.model_validate_json(receipt) for (receipt,) in rows])


# --- the texts forgotten, and where they are quoted ---


def _unquote_files(index: Index, entity: str, said: list[str]) -> tuple[Removed, frozenset[str]]:
    """Cut the quotes of the forgotten texts out of the entity's crystals, word-photos and
    memory files (the index reads the changed files again); the files changed."""
    quotes = Quotes(said)
    cut: set[str] = set()
    if not quotes:
        return Removed(layer="files", count=0, detail=_FILES), frozenset()
    home = index.home(entity)
    indexed = [source.path for source, _ in home.sources()]
    kept = [p.relative_to(home.root).as_posix() for p in (home.root / "crystals").rglob("*.md")]
    for relative in [*indexed, *sorted(kept)]:
        try:
            text = home.path(relative).read_text()
        except (OSError, UnicodeDecodeError):
            continue
        if quotes.found_in(text):
            homes.replace_file(home, relative, quotes.cut(text))
            if relative in indexed:
                index.sync_file(entity, relative)
            cut.add(relative)
    return Removed(layer="files", count=len(cut), detail=_FILES), frozenset(cut)


_FILES = "crystals and memory files quoting it"


# --- pps check ---


def check(findings: Findings, db: Database) -> None:
    """`pps check`'s part: for each event the entity forgot, no layer holds it any more
    (layer 1 holds no text of it, search no row, the graph no episode, no summary covers
    it). The recall log is blanked by the same transaction as layer 1."""
    entity, conn = findings.entity, db.conn
    refs = [row[0] for row in conn.execute(_REFS, (entity,))]
    findings.counts["forgotten"] = len(refs)
    held: dict[str, list[str]] = {"raw": [], "search": [], "graph": [], "summaries": []}
    for ref in refs:
        ids = versions.versions_of(conn, entity, ref)
        counts = {
            "raw": versions.with_text(conn, entity, ids),
            "search": turns.rows_of(conn, entity, ids),
            "graph": episodes.holding(conn, entity, ids),
            "summaries": summaries.covering(conn, entity, versions.placed(conn, entity, ids)),
        }
        for layer, count in counts.items():
            if count:
                held[layer].append(ref)
    for layer, still in held.items():
        findings.problem(
            "forgotten",
            f"forgotten_in_{layer}",
            still,
            f"forgotten events still held by {layer}",
            f"pps forget --entity {entity} --event <uid> (again)",
            safe=False,
        )


_REFS = "SELECT DISTINCT ref FROM forgotten WHERE entity = ? AND kind = 'event' ORDER BY ref"


def scrub_handler(db: Database):
    """The `scrub` job: old copies of a forgotten message out of the database's files."""

    def handle(job: queue.Job) -> None:
        db.scrub(SCRUBBED)

    return handle
