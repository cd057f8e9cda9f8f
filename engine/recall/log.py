"""The recall log (PPS_RECALL_LOG, on by default): each recall's context, channel and
session, the items it answered with (their sources, scores and signals, their text cut
to LOG_TEXT_CHARS), each layer's report and its latency, for audits (engine.recall.audit
draws from it) and for marking what the reply used (engine.recall.used). Entries older
than PPS_RECALL_LOG_DAYS or past the newest PPS_RECALL_LOG_ROWS of an entity are pruned
at each write, except judged ones."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any

from pydantic import BaseModel, Field

from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.kernel.patterns import CHANNEL_PATTERN
from engine.kernel.quotes import FORGOTTEN
from engine.kernel.requests import INT64_MAX, Request
from engine.recall import used
from engine.recall.shapes import Item, LayerReport, RecallRequest
from engine.store.db import Database

LOG_TEXT_CHARS = 1000
"""The recall log keeps each item's text up to this many characters, for the audit."""
CONTEXT_CHARS = 2000
"""... and the context recalled for up to this many."""


class LogEntry(BaseModel):
    id: int
    context: str
    channel: str | None
    session_id: str | None = None
    latency_ms: float
    items: list[dict[str, Any]]
    manifest: dict[str, Any]
    created_at: str


class Log(BaseModel):
    entries: list[LogEntry]


class LogQuery(Request):
    limit: int = Field(50, ge=1, le=500)
    id: int | None = Field(None, ge=1, le=INT64_MAX, description="One entry, by its id.")
    channel: str | None = Field(
        None, pattern=CHANNEL_PATTERN, description="Recalls from one channel."
    )
    contains: str | None = Field(
        None, min_length=1, max_length=200, description="Recalls whose context holds this text."
    )


def entries(db: Database, entity: str, ask: LogQuery) -> Log:
    """The newest recall log entries, for audits (what surfaced, why, how fast, whether
    the reply used it: `used`, null before a reply), filtered by id, channel or the text
    of their context (any case)."""
    where: list[str] = ["entity = ?"]
    params: list[Any] = [entity]
    if ask.id is not None:
        where.append("id = ?")
        params.append(ask.id)
    if ask.channel is not None:
        where.append("channel = ?")
        params.append(ask.channel)
    if ask.contains is not None:
        where.append("instr(lower(context), lower(?)) > 0")
        params.append(ask.contains)
    rows = db.conn.execute(
        f"SELECT * FROM recall_log WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?",
        [*params, ask.limit],
    ).fetchall()
    marked = used.marks(db, entity, [row["id"] for row in rows])
    found = [
        LogEntry.model_validate(
            {
                **dict(row),
                "items": [
                    {**item, "used": marked.get((row["id"], rank))}
                    for rank, item in enumerate(json.loads(row["items"]), start=1)
                ],
                "manifest": json.loads(row["manifest"]),
            }
        )
        for row in rows
    ]
    return Log(entries=found)


def write(
    db: Database,
    settings: Settings,
    entity: str,
    request: RecallRequest,
    chosen: list[Item],
    manifest: dict[str, LayerReport],
    latency: float,
    now: datetime | None = None,
) -> None:
    """One recall's entry, then the entity's entries past the retention pruned; on a full
    disk it is dropped (and counted), never failing the recall. `now`: the clock (tests)."""
    at = now or datetime.now(UTC)
    items = [
        {
            "layer": i.layer,
            "score": i.score,
            "source": i.source,
            "signals": i.signals,
            "text": i.text[:LOG_TEXT_CHARS],
        }
        for i in chosen
    ]
    with db.dropping("recall_log"), db.write() as conn:  # a full disk never fails a recall
        conn.execute(
            "INSERT INTO recall_log (entity, context, channel, session_id, latency_ms, items,"
            " manifest, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entity,
                request.context[:CONTEXT_CHARS],
                request.channel,
                request.session_id,
                latency,
                json.dumps(items),
                json.dumps({k: v.model_dump() for k, v in manifest.items()}),
                at.strftime(timestamps.FORMAT),
            ),
        )
        prune(conn, entity, settings.recall_log_days, settings.recall_log_rows, at)


def prune(conn: sqlite3.Connection, entity: str, days: int, rows: int, now: datetime) -> int:
    """Drop the entity's entries older than `days` and past the newest `rows` (0: no
    limit); a judged recall is kept (its judgments are the evaluation set). How many went."""
    judged = "NOT EXISTS (SELECT 1 FROM audit_judgments j WHERE j.log_id = recall_log.id)"
    gone = 0
    if days:
        cutoff = (now - timedelta(days=days)).strftime(timestamps.FORMAT)
        gone += conn.execute(
            f"DELETE FROM recall_log WHERE entity = ? AND created_at < ? AND {judged}",
            (entity, cutoff),
        ).rowcount
    if rows:
        gone += conn.execute(
            f"DELETE FROM recall_log WHERE entity = ? AND {judged} AND id <= (SELECT id FROM"
            " recall_log WHERE entity = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
            (entity, entity, rows),
        ).rowcount
    return gone


QUOTED_CHARS = 20
"""A forgotten text this long is blanked wherever the recall log holds it; a shorter one
only where it is a context whole (or an item that came from it)."""


@dataclass
class Gone:
    """What a forget took away, as the recall log's entries name it: turns (by uid and
    id), facts, summaries, files (home paths), and the forgotten texts (`said`)."""

    event_uids: set[str] = field(default_factory=set)
    event_ids: set[int] = field(default_factory=set)
    facts: set[str] = field(default_factory=set)
    summaries: set[int] = field(default_factory=set)
    paths: set[str] = field(default_factory=set)
    said: list[str] = field(default_factory=list)

    @cached_property
    def long(self) -> list[str]:
        return [text for text in self.said if len(text) >= QUOTED_CHARS]

    def names(self, item: dict[str, Any]) -> bool:
        source = item.get("source") or {}
        text = item.get("text") or ""
        return (
            source.get("event_uid") in self.event_uids
            or source.get("id") in self.event_ids
            or source.get("fact_uuid") in self.facts
            or bool(self.event_uids.intersection(source.get("event_uids") or ()))
            or source.get("summary_id") in self.summaries
            or source.get("path") in self.paths
            or any(said in text for said in self.long)
        )

    def cut(self, context: str) -> str:
        if context.strip() in self.said:
            return FORGOTTEN
        for said in self.long:
            context = context.replace(said, FORGOTTEN)
        return context


def blank(conn: sqlite3.Connection, entity: str, gone: Gone) -> int:
    """Blank the recall log's copies of what was forgotten (inside the caller's
    transaction): an item that came from it, or holds its text, keeps its layer, score
    and rank with its text and source emptied; a context that holds it has it replaced.
    Returns how many entries changed. SQLite finds the entries; only those are read."""
    changed = 0
    for row in _naming(conn, entity, gone):
        items = json.loads(row["items"])
        hit = False
        for item in items:
            if gone.names(item):
                item.update(text="", source={"forgotten": True}, signals=None)
                hit = True
        context = gone.cut(row["context"])
        if hit or context != row["context"]:
            conn.execute(
                "UPDATE recall_log SET context = ?, items = ? WHERE id = ?",
                (context, json.dumps(items), row["id"]),
            )
            changed += 1
    return changed


_NAMES = (
    "json_extract(i.value, '$.source.event_uid') IN (SELECT value FROM json_each(:uids))"
    " OR json_extract(i.value, '$.source.id') IN (SELECT value FROM json_each(:ids))"
    " OR json_extract(i.value, '$.source.fact_uuid') IN (SELECT value FROM json_each(:facts))"
    " OR json_extract(i.value, '$.source.summary_id') IN (SELECT value FROM json_each(:sums))"
    " OR json_extract(i.value, '$.source.path') IN (SELECT value FROM json_each(:paths))"
    " OR EXISTS (SELECT 1 FROM json_each(i.value, '$.source.event_uids') u"
    " WHERE u.value IN (SELECT value FROM json_each(:uids)))"
    " OR EXISTS (SELECT 1 FROM json_each(:long) t"
    " WHERE instr(json_extract(i.value, '$.text'), t.value))"
)
_HOLDS = (
    "EXISTS (SELECT 1 FROM json_each(:said) t WHERE trim(r.context) = t.value)"
    " OR EXISTS (SELECT 1 FROM json_each(:long) t WHERE instr(r.context, t.value))"
)


def _naming(conn: sqlite3.Connection, entity: str, gone: Gone) -> list[sqlite3.Row]:
    """The entity's entries with an item that names what went or holds its text, or a
    context that holds it."""
    return conn.execute(
        "SELECT r.id, r.context, r.items FROM recall_log r WHERE r.entity = :entity AND ("
        f"EXISTS (SELECT 1 FROM json_each(r.items) i WHERE {_NAMES}) OR {_HOLDS})",
        {
            "entity": entity,
            "uids": json.dumps(sorted(gone.event_uids)),
            "ids": json.dumps(sorted(gone.event_ids)),
            "facts": json.dumps(sorted(gone.facts)),
            "sums": json.dumps(sorted(gone.summaries)),
            "paths": json.dumps(sorted(gone.paths)),
            "said": json.dumps([text.strip() for text in gone.said]),
            "long": json.dumps(gone.long),
        },
    ).fetchall()
