"""Layer 4, message summaries: compressed history over ranges of events.

A summary covers the entity's events with ids in [start_id, end_id] (in the given
channels, or all). Those events are "summarized"; everything else is not, and startup
recall returns every unsummarized turn, so the unsummarized count is what tells an
entity it is time to summarize (above 100, say).

Only turns count: markers (engine.capture.markers: a session started, a context
compacted) may lie inside a summary's range, but they are never listed, counted or
handed to summarize_messages as turns.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, Field, model_validator

from engine.capture.events import Event
from engine.capture.markers import markers_only, turns_only
from engine.capture.words import fts_query, searchable
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.kernel.errors import Conflict, InputError, NotFound
from engine.kernel.patterns import CHANNEL_PATTERN
from engine.kernel.requests import NON_BLANK, Request, is_blank
from engine.kernel.timestamps import MomentText
from engine.store.db import Database

WARN_ABOVE = 100
SUMMARY_TYPE_PATTERN = r"^[a-z0-9][a-z0-9_.:-]{0,63}$"

# Events not inside any summary of the same entity whose channels include theirs.
_UNSUMMARIZED = (
    "NOT EXISTS (SELECT 1 FROM summaries s WHERE s.entity = e.entity"
    " AND e.id BETWEEN s.start_id AND s.end_id"
    " AND (s.channels IS NULL OR EXISTS"
    "  (SELECT 1 FROM json_each(s.channels) c WHERE c.value = e.channel)))"
)
_TURN = turns_only("e.")
_MARKER = markers_only("e.")
# Events of the channels in a JSON list (bound twice), or of every channel when NULL.
_IN_CHANNELS = "(? IS NULL OR EXISTS (SELECT 1 FROM json_each(?) c WHERE c.value = e.channel))"


class SummaryIn(Request):
    summary_text: str = Field(min_length=1, max_length=256 * 1024, json_schema_extra=NON_BLANK)
    start_id: int = Field(ge=1, description="First event id covered.")
    end_id: int = Field(ge=1, description="Last event id covered.")
    channels: list[Annotated[str, Field(pattern=CHANNEL_PATTERN)]] | None = Field(
        None, description="Only events of these channels are covered; default: every channel."
    )
    summary_type: str = Field("message", pattern=SUMMARY_TYPE_PATTERN)

    @model_validator(mode="after")
    def _range(self) -> SummaryIn:
        if is_blank(self.summary_text):
            raise ValueError("summary_text must not be empty")
        if self.start_id > self.end_id:
            raise ValueError("start_id must not be after end_id")
        return self


class Summary(BaseModel):
    id: int
    summary_text: str
    summary_type: str
    start_id: int
    end_id: int
    channels: list[str] | None
    event_count: int
    first_at: str | None
    last_at: str | None
    created_at: str

    @classmethod
    def from_row(cls, row) -> Summary:
        data = dict(row)
        data.pop("entity", None)
        data["channels"] = json.loads(data["channels"]) if data["channels"] else None
        return cls.model_validate(data)


class SummaryHit(BaseModel):
    summary: Summary
    snippet: str
    score: float


class SummaryStats(BaseModel):
    summaries: int
    by_type: dict[str, int]
    summarized_events: int
    unsummarized: int
    warning: str | None
    last_summary_at: str | None
    oldest_unsummarized_at: str | None


class TurnsSinceSummary(BaseModel):
    turns: list[Event]
    unsummarized: int
    warning: str | None


class TurnsSince(BaseModel):
    turns: list[Event]
    summaries: list[Summary]


class Summaries(BaseModel):
    summaries: list[Summary]


class SummaryHits(BaseModel):
    results: list[SummaryHit]


# --- what callers ask (every face builds these; limits and defaults live here) ---


class RecentQuery(Request):
    limit: int = Field(5, ge=1, le=100)


class SummarySearch(Request):
    query: str = Field(min_length=1, max_length=4096, json_schema_extra=searchable)
    limit: int = Field(10, ge=1, le=100)


class SinceSummaryQuery(Request):
    limit: int = Field(50, ge=1, le=1000)
    offset: int = Field(0, ge=0)
    channel: str | None = Field(None, pattern=CHANNEL_PATTERN)
    oldest_first: bool = True


class SinceQuery(Request):
    timestamp: MomentText = Field(description="ISO-8601 or epoch seconds.")
    include_summaries: bool = True
    limit: int = Field(100, ge=1, le=1000)


class Batch(BaseModel):
    """The next turns to summarize: the oldest unsummarized ones by id."""

    turns: list[Event]
    unsummarized: int

    @property
    def start_id(self) -> int | None:
        return self.turns[0].id if self.turns else None

    @property
    def end_id(self) -> int | None:
        return self.turns[-1].id if self.turns else None

    @property
    def channels(self) -> list[str]:
        return sorted({turn.channel for turn in self.turns})


def store(
    db: Database, entity: str, summary: SummaryIn, written_from: list[int] | None = None
) -> Summary:
    """Record a summary of an event range; the range's ends must be this entity's events.

    `written_from` is the ids of the turns the summary was written from, read before it
    was written: if the range's unsummarized turns are no longer exactly those (another
    summary took some meanwhile), nothing is stored and Conflict says so. The check runs
    in the same transaction as the insert, so two writers cannot both pass it.
    """
    with db.write() as conn:
        for field in ("start_id", "end_id"):
            found = conn.execute(
                "SELECT 1 FROM events WHERE entity = ? AND id = ?",
                (entity, getattr(summary, field)),
            ).fetchone()
            if found is None:
                raise NotFound(f"no event with id {getattr(summary, field)}", field=field)
        channels = json.dumps(summary.channels) if summary.channels else None
        if written_from is not None:
            open_ids = conn.execute(
                "SELECT id FROM events e WHERE e.entity = ? AND e.id BETWEEN ? AND ?"
                f" AND {_IN_CHANNELS} AND {_TURN} AND {_UNSUMMARIZED} ORDER BY id",
                (entity, summary.start_id, summary.end_id, channels, channels),
            ).fetchall()
            if [row[0] for row in open_ids] != sorted(written_from):
                raise Conflict(
                    f"turns {summary.start_id}..{summary.end_id} were summarized by another"
                    " call while this summary was written: nothing stored; call again for"
                    " the turns still unsummarized"
                )
        count, first_at, last_at = conn.execute(
            "SELECT COUNT(*), MIN(created_at), MAX(created_at) FROM events e"
            f" WHERE entity = ? AND id BETWEEN ? AND ? AND {_IN_CHANNELS}",
            (entity, summary.start_id, summary.end_id, channels, channels),
        ).fetchone()
        row = conn.execute(
            "INSERT INTO summaries (entity, summary_text, summary_type, start_id, end_id,"
            " channels, event_count, first_at, last_at, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
            (
                entity,
                summary.summary_text,
                summary.summary_type,
                summary.start_id,
                summary.end_id,
                channels,
                count,
                first_at,
                last_at,
                timestamps.now(),
            ),
        ).fetchone()
    return Summary.from_row(row)


def recent(db: Database, entity: str, ask: RecentQuery) -> Summaries:
    """The newest summaries, oldest of them first (reading order)."""
    rows = db.conn.execute(
        "SELECT * FROM summaries WHERE entity = ? ORDER BY id DESC LIMIT ?", (entity, ask.limit)
    ).fetchall()
    return Summaries(summaries=[Summary.from_row(row) for row in reversed(rows)])


def search(db: Database, entity: str, ask: SummarySearch) -> SummaryHits:
    """Summaries by their words, best first, with a highlighted snippet."""
    match = fts_query(ask.query)
    if match is None:
        raise InputError.of("query", "no searchable words in the query")
    rows = db.conn.execute(
        "SELECT s.*, snippet(summaries_fts, 0, '**', '**', '…', 24) AS snippet,"
        " bm25(summaries_fts) AS rank FROM summaries_fts JOIN summaries s"
        " ON s.id = summaries_fts.rowid WHERE summaries_fts MATCH ? AND s.entity = ?"
        " ORDER BY rank LIMIT ?",
        (match, entity, ask.limit),
    ).fetchall()
    hits = []
    for row in rows:
        data = dict(row)
        snippet, rank = data.pop("snippet"), data.pop("rank")
        hits.append(SummaryHit(summary=Summary.from_row(data), snippet=snippet, score=-rank))
    return SummaryHits(results=hits)


def unsummarized_count(db: Database, entity: str, channel: str | None = None) -> int:
    """The entity's turns (of one channel) that no summary covers. Every recall asks, so
    this counts the covered events range by range (the summaries' ranges merged) instead
    of testing each event against every summary: ~5 ms instead of ~95 at 100k events
    (bench/recall.py); then the few uncovered markers, found by type, are taken off."""
    where, params = _scope(entity, channel)
    with db.snapshot() as conn:  # three counts of one state: events arrive meanwhile
        total = conn.execute(f"SELECT COUNT(*) FROM events e WHERE {where}", params).fetchone()[0]
        markers = conn.execute(
            f"SELECT COUNT(*) FROM events e WHERE {where} AND {_MARKER} AND {_UNSUMMARIZED}",
            params,
        ).fetchone()[0]
        return total - _covered(db, entity, channel) - markers


def _covered(db: Database, entity: str, channel: str | None) -> int:
    """Events inside the range of a summary that applies to their channel: those in the
    union of the all-channel summaries' ranges, plus, per channel a summary names, that
    channel's events in its summaries' ranges outside that union."""
    everywhere: list[tuple[int, int]] = []
    named: dict[str, list[tuple[int, int]]] = {}
    for start, end, channels in db.conn.execute(
        "SELECT start_id, end_id, channels FROM summaries WHERE entity = ?", (entity,)
    ):
        if channels is None:
            everywhere.append((start, end))
        else:
            for name in json.loads(channels):
                named.setdefault(name, []).append((start, end))
    common = _merged(everywhere)
    count = _events_in(db, common, *_scope(entity, channel))
    for name, ranges in named.items():
        if channel is None or name == channel:
            outside = list(_outside(_merged(ranges), common))
            count += _events_in(db, outside, *_scope(entity, name))
    return count


def _events_in(db: Database, ranges: list[tuple[int, int]], where: str, params: list) -> int:
    """Events matching `where` with ids inside the ranges (a range scan each)."""
    return sum(
        db.conn.execute(
            f"SELECT COUNT(*) FROM events e WHERE e.id BETWEEN ? AND ? AND {where}",
            [low, high, *params],
        ).fetchone()[0]
        for low, high in ranges
    )


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Inclusive id ranges, overlapping or touching ones joined, in order."""
    joined: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if joined and low <= joined[-1][1] + 1:
            joined[-1] = (joined[-1][0], max(joined[-1][1], high))
        else:
            joined.append((low, high))
    return joined


def _outside(ranges: list[tuple[int, int]], holes: list[tuple[int, int]]):
    """The parts of merged `ranges` that no range of merged `holes` covers."""
    for low, high in ranges:
        for hole_low, hole_high in holes:
            if hole_high < low or hole_low > high:
                continue
            if hole_low > low:
                yield low, hole_low - 1
            low = max(low, hole_high + 1)
            if low > high:
                break
        if low <= high:
            yield low, high


def warning(unsummarized: int, settings: Settings) -> str | None:
    """Said when the unsummarized turns pass `summarize_after` (100 where it is 0)."""
    above = settings.summarize_after or WARN_ABOVE
    if unsummarized <= above:
        return None
    if settings.summarize_after and settings.llm_provider != "none":
        return (
            f"{unsummarized} unsummarized turns (more than {above}): summaries are being"
            " written by themselves (the queue's summarize jobs)"
        )
    return (
        f"{unsummarized} unsummarized turns (more than {above}): run summarize_messages"
        " to compress history and keep startup light"
    )


def stats(db: Database, settings: Settings, entity: str) -> SummaryStats:
    conn = db.conn
    by_type = dict(
        conn.execute(
            "SELECT summary_type, COUNT(*) FROM summaries WHERE entity = ? GROUP BY summary_type",
            (entity,),
        ).fetchall()
    )
    last = conn.execute("SELECT MAX(created_at) FROM summaries WHERE entity = ?", (entity,))
    oldest = conn.execute(
        f"SELECT MIN(created_at) FROM events e WHERE e.entity = ? AND {_TURN} AND {_UNSUMMARIZED}",
        (entity,),
    )
    total = conn.execute(
        f"SELECT COUNT(*) FROM events e WHERE e.entity = ? AND {_TURN}", (entity,)
    ).fetchone()[0]
    unsummarized = unsummarized_count(db, entity)
    return SummaryStats(
        summaries=sum(by_type.values()),
        by_type=by_type,
        summarized_events=total - unsummarized,
        unsummarized=unsummarized,
        warning=warning(unsummarized, settings),
        last_summary_at=last.fetchone()[0],
        oldest_unsummarized_at=oldest.fetchone()[0],
    )


def turns_since_summary(
    db: Database, settings: Settings, entity: str, ask: SinceSummaryQuery
) -> TurnsSinceSummary:
    """The turns no summary covers yet, a page at a time, with the total count."""
    where, params = _scope(entity, ask.channel)
    direction = "ASC" if ask.oldest_first else "DESC"
    rows = db.conn.execute(
        f"SELECT * FROM events e WHERE {where} AND {_TURN} AND {_UNSUMMARIZED}"
        f" ORDER BY created_at {direction}, id {direction} LIMIT ? OFFSET ?",
        [*params, ask.limit, ask.offset],
    ).fetchall()
    total = unsummarized_count(db, entity, ask.channel)
    return TurnsSinceSummary(
        turns=[Event.from_row(row) for row in rows],
        unsummarized=total,
        warning=warning(total, settings),
    )


def next_batch(db: Database, entity: str, limit: int) -> Batch:
    """The oldest `limit` unsummarized turns by id, for summarize_messages.

    By id, not by time: a summary covers an id range, and only a prefix in id order
    guarantees that the range holds no unsummarized turn outside the batch (an import can
    store old turns with new ids). A turn stored after this read gets a higher id, so a
    summary of the batch never covers it.
    """
    rows = db.conn.execute(
        f"SELECT * FROM events e WHERE e.entity = ? AND {_TURN} AND {_UNSUMMARIZED}"
        " ORDER BY id LIMIT ?",
        (entity, limit),
    ).fetchall()
    return Batch(
        turns=[Event.from_row(row) for row in rows],
        unsummarized=unsummarized_count(db, entity),
    )


def turns_since(db: Database, entity: str, ask: SinceQuery) -> TurnsSince:
    """Turns at or after a moment (oldest first), with the summaries made since then."""
    at = ask.timestamp
    rows = db.conn.execute(
        f"SELECT * FROM events e WHERE e.entity = ? AND e.created_at >= ? AND {_TURN}"
        " ORDER BY created_at, id LIMIT ?",
        (entity, at, ask.limit),
    ).fetchall()
    found: list[Any] = []
    if ask.include_summaries:
        found = db.conn.execute(
            "SELECT * FROM summaries WHERE entity = ? AND (last_at >= ? OR created_at >= ?)"
            " ORDER BY id",
            (entity, at, at),
        ).fetchall()
    return TurnsSince(
        turns=[Event.from_row(row) for row in rows],
        summaries=[Summary.from_row(row) for row in found],
    )


def _scope(entity: str, channel: str | None) -> tuple[str, list]:
    if channel is None:
        return "e.entity = ?", [entity]
    return "e.entity = ? AND e.channel = ?", [entity, channel]
