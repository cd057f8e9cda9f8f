"""The recall log (PPS_RECALL_LOG): each recall's context, the items it answered with
(their sources, scores and signals, their text cut to LOG_TEXT_CHARS), each layer's
report and its latency, for audits (engine.recall.audit draws from it)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from engine.kernel import timestamps
from engine.kernel.patterns import CHANNEL_PATTERN
from engine.kernel.requests import INT64_MAX, Request
from engine.recall.shapes import Item, LayerReport
from engine.store.db import Database

LOG_TEXT_CHARS = 1000
"""The recall log keeps each item's text up to this many characters, for the audit."""
CONTEXT_CHARS = 2000
"""... and the context recalled for up to this many."""


class LogEntry(BaseModel):
    id: int
    context: str
    channel: str | None
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
    """The newest recall log entries, for audits (what surfaced, why, how fast), filtered
    by id, channel or the text of their context (any case)."""
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
    )
    found = [
        LogEntry.model_validate(
            {
                **dict(row),
                "items": json.loads(row["items"]),
                "manifest": json.loads(row["manifest"]),
            }
        )
        for row in rows
    ]
    return Log(entries=found)


def write(
    db: Database,
    entity: str,
    context: str,
    channel: str | None,
    chosen: list[Item],
    manifest: dict[str, LayerReport],
    latency: float,
) -> None:
    """One recall's entry; on a full disk it is dropped (and counted), never failing the
    recall."""
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
            "INSERT INTO recall_log (entity, context, channel, latency_ms, items, manifest,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                entity,
                context[:CONTEXT_CHARS],
                channel,
                latency,
                json.dumps(items),
                json.dumps({k: v.model_dump() for k, v in manifest.items()}),
                timestamps.now(),
            ),
        )
