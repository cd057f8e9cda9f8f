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
import sqlite3
from dataclasses import replace
from typing import Annotated, Any

from pydantic import BaseModel, Field, model_validator

from engine.capture import events
from engine.capture.events import Covered, Event, Span
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
    with db.write() as conn:  # the reads below are of this transaction (db.conn is conn)
        for field in ("start_id", "end_id"):
            event_id = getattr(summary, field)
            try:
                events.get_event(db, entity, event_id=event_id)
            except NotFound:
                raise NotFound(f"no event with id {event_id}", field=field) from None
        channels = json.dumps(summary.channels) if summary.channels else None
        span = Span(
            entity, low=summary.start_id, high=summary.end_id, channels=summary.channels or None
        )
        if written_from is not None:
            open_turns = events.in_span(
                db, replace(span, kind="turn", outside=_covered_ranges(db, entity)), by="id"
            )
            if [turn.id for turn in open_turns] != sorted(written_from):
                raise Conflict(
                    f"turns {summary.start_id}..{summary.end_id} were summarized by another"
                    " call while this summary was written: nothing stored; call again for"
                    " the turns still unsummarized"
                )
        count, first_at, last_at = events.extent(db, span)
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


_COVERING = (
    "FROM summaries s WHERE s.entity = ? AND EXISTS (SELECT 1 FROM json_each(?) x"
    " WHERE json_extract(x.value, '$[0]') BETWEEN s.start_id AND s.end_id"
    " AND (s.channels IS NULL"
    " OR json_extract(x.value, '$[1]') IN (SELECT value FROM json_each(s.channels))))"
)
"""The entity's summaries covering any of the events given as JSON [[id, channel], ...]."""


def covering(conn: sqlite3.Connection, entity: str, events: list[tuple[int, str]]) -> int:
    """How many of the entity's summaries cover any of these events (id, channel)."""
    (count,) = conn.execute(f"SELECT count(*) {_COVERING}", (entity, json.dumps(events))).fetchone()
    return int(count)


def withdraw(conn: sqlite3.Connection, entity: str, events: list[tuple[int, str]]) -> list[int]:
    """Delete the entity's summaries that cover any of these events (id, channel), inside
    the caller's transaction: what they said of a forgotten or edited turn goes with them,
    and their other turns are unsummarized again, for the next summary to cover (by
    itself with an LLM, else by the agent's summarize_messages). Returns their ids."""
    return [
        row[0]
        for row in conn.execute(
            f"DELETE FROM summaries WHERE id IN (SELECT s.id {_COVERING}) RETURNING id",
            (entity, json.dumps(events)),
        )
    ]


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
    (bench/recall.py); then the few uncovered markers, found by type, and the turns an edit
    replaced or a deletion removed, found by index, are taken off."""
    scope = Span(entity, channel=channel)
    with db.snapshot():  # three counts of one state: events arrive meanwhile
        covered = _covered_ranges(db, entity, channel)
        total = events.count(db, scope)
        markers = events.count(db, replace(scope, kind="marker", outside=covered))
        markers += events.count(db, replace(scope, kind="superseded", outside=covered))
        inside = sum(
            events.count(db, replace(scope, channel=name or channel, low=low, high=high))
            for low, high, name in covered
        )
        return total - inside - markers


def _covered_ranges(db: Database, entity: str, channel: str | None = None) -> Covered:
    """The event ids the entity's summaries cover (those of one channel's events, if
    given), as disjoint ranges: the all-channel summaries' ranges merged, then, per
    channel a summary names, that channel's merged ranges outside them."""
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
    covered: list[tuple[int, int, str | None]] = [(low, high, None) for low, high in common]
    for name, ranges in named.items():
        if channel is None or name == channel:
            covered += [(low, high, name) for low, high in _outside(_merged(ranges), common)]
    return covered


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
    turns = Span(entity, kind="turn")
    with db.snapshot() as conn:  # the summaries and the events of one state
        by_type = dict(
            conn.execute(
                "SELECT summary_type, COUNT(*) FROM summaries WHERE entity = ?"
                " GROUP BY summary_type",
                (entity,),
            ).fetchall()
        )
        last = conn.execute(
            "SELECT MAX(created_at) FROM summaries WHERE entity = ?", (entity,)
        ).fetchone()[0]
        _, oldest, _ = events.extent(db, replace(turns, outside=_covered_ranges(db, entity)))
        total = events.count(db, turns)
        unsummarized = unsummarized_count(db, entity)
    return SummaryStats(
        summaries=sum(by_type.values()),
        by_type=by_type,
        summarized_events=total - unsummarized,
        unsummarized=unsummarized,
        warning=warning(unsummarized, settings),
        last_summary_at=last,
        oldest_unsummarized_at=oldest,
    )


def turns_since_summary(
    db: Database, settings: Settings, entity: str, ask: SinceSummaryQuery
) -> TurnsSinceSummary:
    """The turns no summary covers yet, a page at a time, with the total count."""
    with db.snapshot():  # the summaries' ranges and the events of one state
        covered = _covered_ranges(db, entity, ask.channel)
        turns = events.in_span(
            db,
            Span(entity, channel=ask.channel, kind="turn", outside=covered),
            newest_first=not ask.oldest_first,
            limit=ask.limit,
            offset=ask.offset,
        )
        total = unsummarized_count(db, entity, ask.channel)
    return TurnsSinceSummary(
        turns=turns,
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
    with db.snapshot():  # the summaries' ranges and the events of one state
        covered = _covered_ranges(db, entity)
        turns = events.in_span(db, Span(entity, kind="turn", outside=covered), by="id", limit=limit)
        return Batch(turns=turns, unsummarized=unsummarized_count(db, entity))


def turns_since(db: Database, entity: str, ask: SinceQuery) -> TurnsSince:
    """Turns at or after a moment (oldest first), with the summaries made since then."""
    at = ask.timestamp
    turns = events.in_span(db, Span(entity, since=at, kind="turn"), limit=ask.limit)
    found: list[Any] = []
    if ask.include_summaries:
        found = db.conn.execute(
            "SELECT * FROM summaries WHERE entity = ? AND (last_at >= ? OR created_at >= ?)"
            " ORDER BY id",
            (entity, at, at),
        ).fetchall()
    return TurnsSince(
        turns=turns,
        summaries=[Summary.from_row(row) for row in found],
    )
