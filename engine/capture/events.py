"""Layer 1, raw capture: every event from every channel, in SQLite.

What happens when an event arrives: `parse_events` checks the request as a whole
(shape, batch size, each field, content size) and names every problem; `Capture.record`
writes the batch in one transaction and reports, per event, its id and whether it
was new. Nothing is acknowledged before the commit; a rejected batch stores nothing.

Capture knows nothing of the layers that follow it. A `Capture` is made once with its
listeners (the runtime's, engine.runtime.CAPTURE_LISTENERS: search indexes the turns,
the graph windows them); inside each batch's transaction it tells them what it stored,
a `Captured` carrying the stored events themselves, so no listener reads them back and
an event and what it owes the other layers commit together or not at all.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    TypeAdapter,
    ValidationError,
)

from engine.capture import versions
from engine.capture.markers import current, is_marker, markers_only, superseded, turns_only
from engine.capture.words import any_of, keywords, searchable
from engine.kernel import timestamps
from engine.kernel.errors import FieldProblem, InputError, NotFound, from_validation
from engine.kernel.events import EventIn
from engine.kernel.patterns import CHANNEL_PATTERN, EVENT_TYPE_PATTERN
from engine.kernel.requests import INT64_MAX, Request, up_to
from engine.kernel.timestamps import MomentText
from engine.store.db import Database


class Event(BaseModel):
    """One stored event."""

    id: int
    event_uid: str
    entity: str
    channel: str
    event_type: str
    author: str | None
    role: str | None
    content: str
    metadata: dict[str, Any]
    session_id: str | None
    created_at: str
    received_at: str
    replaced_by: str | None = None
    """The event_uid of the edit that replaced it (the newest), if one did."""
    deleted_at: str | None = None
    """When it was deleted, if it was: it stays here, and nowhere else answers with it."""

    @classmethod
    def from_row(cls, row: sqlite3.Row | dict[str, Any]) -> Event:
        data = dict(row)
        data["metadata"] = json.loads(data["metadata"])
        return cls.model_validate(data)


class Recorded(BaseModel):
    id: int
    event_uid: str
    duplicate: bool


Order = Literal["newest", "oldest"]


class EventFilter(Request):
    """Filters shared by listing and searching. Unknown names are refused."""

    channel: str | None = Field(None, pattern=CHANNEL_PATTERN)
    event_type: str | None = Field(None, pattern=EVENT_TYPE_PATTERN)
    session_id: str | None = Field(None, max_length=256)
    since: MomentText | None = Field(None, description="Inclusive; ISO-8601 or epoch seconds.")
    until: MomentText | None = Field(None, description="Inclusive; ISO-8601 or epoch seconds.")

    def where(self, entity: str, alias: str = "") -> tuple[str, list[Any]]:
        """The SQL condition for this filter (columns prefixed with `alias`)."""
        clauses: list[str] = [f"{alias}entity = ?"]
        params: list[Any] = [entity]
        for column in ("channel", "event_type", "session_id"):
            value = getattr(self, column)
            if value is not None:
                clauses.append(f"{alias}{column} = ?")
                params.append(value)
        if self.since is not None:
            clauses.append(f"{alias}created_at >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append(f"{alias}created_at <= ?")
            params.append(self.until)
        return " AND ".join(clauses), params


CURSOR_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z_"
    f"{up_to(INT64_MAX)}$"
)
"""A place in the events' order: an event's `created_at` and id (`2026-01-04T12:30:00.000000Z_42`).
A page starts after it, in the page's order: `next_cursor` carries on, and the same cursor
with the other order goes back."""
_CURSOR = re.compile(CURSOR_PATTERN)


class EventQuery(EventFilter):
    limit: int = Field(100, ge=1, le=1000)
    cursor: str | None = Field(
        None,
        description="next_cursor from the previous page: the page starts after that event.",
        json_schema_extra={"pattern": CURSOR_PATTERN},
    )
    order: Order = "newest"


class SearchQuery(EventFilter):
    q: str = Field(
        min_length=1, max_length=4096, description="Words to find.", json_schema_extra=searchable
    )
    limit: int = Field(20, ge=1, le=200)
    offset: int = Field(0, ge=0, le=10_000)


class AroundQuery(EventFilter):
    timestamp: MomentText = Field(description="The moment: ISO-8601 or epoch seconds.")
    count: int = Field(20, ge=1, le=500, description="How many events in all.")


class Page(BaseModel):
    events: list[Event]
    next_cursor: str | None


class SearchHit(BaseModel):
    event: Event
    snippet: str
    score: float


_EVENT_LIST = TypeAdapter(list[EventIn])


def parse_events(payload: Any, *, max_batch: int, max_content_bytes: int) -> list[EventIn]:
    """Validate a request body (one event or a list); raise InputError naming every problem."""
    single = isinstance(payload, dict)
    items = [payload] if single else payload
    if not isinstance(items, list):
        raise InputError.of("body", "expected an event object or a list of event objects")
    if not items:
        raise InputError.of("events", "the list is empty; send at least one event")
    if len(items) > max_batch:
        raise InputError.of(
            "events", f"{len(items)} events in one request; the maximum is {max_batch}"
        )

    def field(index: int, name: str) -> str:
        return name if single else f"events[{index}].{name}"

    try:
        events = _EVENT_LIST.validate_python(items)
    except ValidationError as exc:
        errors = exc.errors()
        if single:
            errors = [{**e, "loc": e["loc"][1:]} for e in errors]
        raise from_validation(errors, prefix=() if single else ("events",)) from None

    problems = []
    for index, event in enumerate(events):
        size = len(event.content.encode())
        if size > max_content_bytes:
            problems.append(
                FieldProblem(
                    field(index, "content"),
                    f"{size} bytes; the maximum is {max_content_bytes} bytes",
                )
            )
        meta_size = len(json.dumps(event.metadata))
        if meta_size > max_content_bytes:
            problems.append(
                FieldProblem(
                    field(index, "metadata"),
                    f"{meta_size} bytes as JSON; the maximum is {max_content_bytes} bytes",
                )
            )
    if problems:
        raise InputError(problems)
    return events


@dataclass(frozen=True)
class Captured:
    """What one batch stored, told to each listener inside the batch's transaction (on
    `conn`, so what a listener writes commits with the events or not at all): the entity,
    the events stored (a duplicate is not among them) as they stand once capture has marked
    what the batch's edits and deletions changed, and the ids of the events that stopped
    being current by it (an edited message's older versions, every version of a deleted
    one). A listener reads none of them back."""

    conn: sqlite3.Connection
    entity: str
    events: tuple[Event, ...]
    superseded: tuple[int, ...] = ()

    def turns(self, role: str | None = None) -> list[Event]:
        """The turns among the events (no markers, nothing an edit replaced or a deletion
        took back), of `role` only when given, in time order (created_at, then id)."""
        found = [
            event
            for event in self.events
            if not is_marker(event.event_type)
            and event.replaced_by is None
            and event.deleted_at is None
            and (role is None or event.role == role)
        ]
        return sorted(found, key=lambda event: (event.created_at, event.id))


Listener = Callable[[Captured], None]
"""Told of each batch that stored something, inside its transaction."""


class Capture:
    """Stores batches of events and tells its listeners what each stored. Made once, with
    the listeners the runtime wires (engine.runtime.CAPTURE_LISTENERS), so a writer of
    events cannot leave one out."""

    def __init__(self, db: Database, listeners: Sequence[Listener]):
        self.db = db
        self.listeners = tuple(listeners)

    def record(
        self,
        entity: str,
        events: list[EventIn],
        received: Sequence[str] | None = None,
        also: Sequence[Listener] = (),
    ) -> list[Recorded]:
        """Store a batch in one transaction, mark what its edits and deletions change, and
        tell the listeners (then `also`, this batch's own) what it stored. An event_uid
        already stored (or repeated in the batch) stores nothing and answers with the
        original id, marked duplicate. `received`, one normalised timestamp per event,
        keeps when each was first received (an import of an export); else now."""
        now = timestamps.now()
        results = []
        stored: list[Event] = []
        named: list[Any] = []  # what the batch's edits and deletions name
        nameable: list[str] = []  # the uids of its messages a client chose
        with self.db.write() as conn:
            for position, event in enumerate(events):
                received_at = received[position] if received is not None else now
                uid = event.event_uid or uuid.uuid4().hex
                created_at = event.created_at or received_at
                metadata = json.dumps(event.metadata, ensure_ascii=False)
                row = conn.execute(
                    "INSERT INTO events (entity, event_uid, channel, event_type, author, role,"
                    " content, metadata, session_id, created_at, received_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    f" ON CONFLICT (entity, event_uid) DO NOTHING RETURNING id, {versions.NAMING}",
                    (
                        entity,
                        uid,
                        event.channel,
                        event.event_type,
                        event.author,
                        event.role,
                        event.content,
                        metadata,
                        event.session_id,
                        created_at,
                        received_at,
                    ),
                ).fetchone()
                if row is None:
                    original = conn.execute(
                        "SELECT id FROM events WHERE entity = ? AND event_uid = ?", (entity, uid)
                    ).fetchone()
                    results.append(Recorded(id=original[0], event_uid=uid, duplicate=True))
                    continue
                event_id, names = row
                results.append(Recorded(id=event_id, event_uid=uid, duplicate=False))
                stored.append(
                    Event(
                        id=event_id,
                        event_uid=uid,
                        entity=entity,
                        channel=event.channel,
                        event_type=event.event_type,
                        author=event.author,
                        role=event.role,
                        content=event.content,
                        metadata=event.metadata,
                        session_id=event.session_id,
                        created_at=created_at,
                        received_at=received_at,
                    )
                )
                if versions.is_change(event.event_type):
                    named.append(names)
                elif event.event_uid is not None:
                    nameable.append(uid)
            if not stored:
                return results
            marked = versions.supersede(conn, entity, nameable, named)
            batch = Captured(
                conn,
                entity,
                tuple(_as_marked(event, marked.marks) for event in stored),
                tuple(marked.gone),
            )
            for listener in (*self.listeners, *also):
                listener(batch)
        return results


def _as_marked(event: Event, marks: dict[int, tuple[str | None, str | None]]) -> Event:
    """The event with the marks capture gave it just now (an event stored after its edit
    or deletion: an import, a spool sent late)."""
    if event.id not in marks:
        return event
    replaced_by, deleted_at = marks[event.id]
    return event.model_copy(update={"replaced_by": replaced_by, "deleted_at": deleted_at})


def list_events(db: Database, entity: str, query: EventQuery) -> Page:
    """One page of events, newest or oldest first, with a cursor for the next page."""
    where, params = query.where(entity)
    newest = query.order == "newest"
    if query.cursor is not None:
        created_at, event_id = _decode_cursor(query.cursor)
        where += " AND (created_at, id) " + ("<" if newest else ">") + " (?, ?)"
        params += [created_at, event_id]
    direction = "DESC" if newest else "ASC"
    rows = db.conn.execute(
        f"SELECT * FROM events WHERE {where}"
        f" ORDER BY created_at {direction}, id {direction} LIMIT ?",
        [*params, query.limit + 1],
    ).fetchall()
    events = [Event.from_row(row) for row in rows[: query.limit]]
    more = len(rows) > query.limit
    next_cursor = _encode_cursor(events[-1]) if more else None
    return Page(events=events, next_cursor=next_cursor)


def newest_turns(db: Database, entity: str, window: int) -> Iterator[Event]:
    """The entity's newest `window` current turns (no markers, nothing an edit replaced or
    a deletion took back), newest first, each made an Event only as it is read: a caller
    that keeps a few of them builds a few."""
    rows = db.conn.execute(
        f"SELECT * FROM events WHERE entity = ? AND {turns_only()}"
        " ORDER BY created_at DESC, id DESC LIMIT ?",
        (entity, window),
    )
    return (Event.from_row(row) for row in rows)


def search_events(db: Database, entity: str, query: SearchQuery) -> list[SearchHit]:
    """Ranked full-text search over content: any of the query's words may match.

    `score` (0-1) is how much of the query an event holds: the sum of the weights of the
    query's words it contains over the sum of all their weights, a word weighing its
    rarity among the entity's events (idf, ln(1 + (N - n + 0.5) / (n + 0.5)) for a word
    in n of N events; always positive). So an event holding every word scores 1, one
    holding only a word every event holds scores near 0, and a single hit of a one-word
    query is 1, not FTS5's bm25, whose idf is clamped to 1e-06 for a word that most
    events hold. Best first by score, then by bm25 (more occurrences in a shorter event)."""
    words = keywords(query.q)
    if not words:
        raise InputError.of("q", "no searchable words in the query")
    weights = _word_weights(db, entity, words)
    total = sum(weights.values())
    where, params = query.where(entity, alias="e.")
    held = " + ".join(
        "(CASE WHEN e.id IN (SELECT rowid FROM events_fts WHERE events_fts MATCH ?)"
        " THEN ? ELSE 0 END)"
        for _ in words
    )
    held_params = [value for word in words for value in (f'"{word}"', weights[word] / total)]
    rows = db.conn.execute(
        "SELECT e.*, snippet(events_fts, 0, '**', '**', '…', 16) AS snippet,"
        f" ({held}) AS held, bm25(events_fts) AS rank"
        " FROM events_fts JOIN events e ON e.id = events_fts.rowid"
        f" WHERE events_fts MATCH ? AND {where} AND {current('e.')}"
        " ORDER BY held DESC, rank LIMIT ? OFFSET ?",
        [*held_params, any_of(words), *params, query.limit, query.offset],
    ).fetchall()
    hits = []
    for row in rows:
        data = dict(row)
        snippet, score = data.pop("snippet"), data.pop("held")
        data.pop("rank")
        hits.append(
            SearchHit(event=Event.from_row(data), snippet=snippet, score=round(min(score, 1.0), 4))
        )
    return hits


def _word_weights(db: Database, entity: str, words: list[str]) -> dict[str, float]:
    """Each word's idf among the entity's events (never another entity's)."""
    [events] = db.conn.execute("SELECT COUNT(*) FROM events WHERE entity = ?", (entity,)).fetchone()
    weights = {}
    for word in words:
        holding = db.conn.execute(
            "SELECT COUNT(*) FROM events_fts JOIN events e ON e.id = events_fts.rowid"
            " WHERE events_fts MATCH ? AND e.entity = ?",
            (f'"{word}"', entity),
        ).fetchone()[0]
        weights[word] = math.log(1 + (events - holding + 0.5) / (holding + 0.5))
    return weights


class Stream(BaseModel):
    """A channel or a session: how many events it holds, and its newest one's time."""

    name: str
    events: int
    last_at: str


def channels(db: Database, entity: str) -> list[Stream]:
    """The entity's channels, the most recently active first."""
    rows = db.conn.execute(
        "SELECT channel AS name, COUNT(*) AS events, MAX(created_at) AS last_at"
        " FROM events WHERE entity = ? GROUP BY channel ORDER BY last_at DESC",
        (entity,),
    )
    return [Stream(**row) for row in rows]


def sessions(
    db: Database, entity: str, channel: str | None = None, limit: int = 30
) -> list[Stream]:
    """The entity's sessions (of one channel, if given), the most recently active first."""
    where, params = "entity = ? AND session_id IS NOT NULL", [entity]
    if channel is not None:
        where += " AND channel = ?"
        params.append(channel)
    rows = db.conn.execute(
        "SELECT session_id AS name, COUNT(*) AS events, MAX(created_at) AS last_at"
        f" FROM events WHERE {where} GROUP BY session_id ORDER BY last_at DESC LIMIT ?",
        [*params, limit],
    )
    return [Stream(**row) for row in rows]


def get_event(
    db: Database, entity: str, event_id: int | None = None, event_uid: str | None = None
) -> Event:
    """One of the entity's events, by its id or its event_uid; another entity's is not
    found."""
    column, value = ("id", event_id) if event_id is not None else ("event_uid", event_uid)
    row = db.conn.execute(
        f"SELECT * FROM events WHERE {column} = ? AND entity = ?", (value, entity)
    ).fetchone()
    if row is None:
        raise NotFound(f"no event {value}", field="event" if column == "id" else "uid")
    return Event.from_row(row)


def exists(db: Database, entity: str, event_uid: str) -> bool:
    """Whether the entity has stored an event with this uid."""
    row = db.conn.execute(
        "SELECT 1 FROM events WHERE entity = ? AND event_uid = ?", (entity, event_uid)
    ).fetchone()
    return row is not None


def in_session(db: Database, entity: str, session_id: str) -> bool:
    """Whether the entity has stored any event of the session `session_id`."""
    row = db.conn.execute(
        "SELECT 1 FROM events WHERE entity = ? AND session_id = ? LIMIT 1", (entity, session_id)
    ).fetchone()
    return row is not None


def turns_around(db: Database, entity: str, query: AroundQuery) -> list[Event]:
    """`count` events around the moment (half before, half after), oldest first."""
    where, params = query.where(entity)
    return _around(db, where, params, (query.timestamp,), query.count)


def turns_around_event(
    db: Database, entity: str, event: Event, count: int = 20, channel: str | None = None
) -> list[Event]:
    """`count` events around one of the entity's events (half before, half after, the
    event among the ones before), oldest first; of one channel, if given. Events of the
    same moment are ordered by id, so a batch stored at once still has an around."""
    where, params = EventFilter(channel=channel).where(entity)
    return _around(db, where, params, (event.created_at, event.id), count)


def _around(
    db: Database, where: str, params: list[Any], at: tuple[Any, ...], count: int
) -> list[Event]:
    """The current events at or before `at` and after it, `count` in all: (created_at,)
    or (created_at, id). What an edit replaced or a deletion removed is not among them."""
    where = f"{where} AND {current()}"
    columns = "created_at" if len(at) == 1 else "(created_at, id)"
    marks = "?" if len(at) == 1 else "(?, ?)"
    before = db.conn.execute(
        f"SELECT * FROM events WHERE {where} AND {columns} <= {marks}"
        " ORDER BY created_at DESC, id DESC LIMIT ?",
        [*params, *at, count],
    ).fetchall()
    after = db.conn.execute(
        f"SELECT * FROM events WHERE {where} AND {columns} > {marks}"
        " ORDER BY created_at ASC, id ASC LIMIT ?",
        [*params, *at, count],
    ).fetchall()
    want_after = min(len(after), count // 2)
    want_before = min(len(before), count - want_after)
    want_after = min(len(after), count - want_before)
    rows = list(reversed(before[:want_before])) + after[:want_after]
    return [Event.from_row(row) for row in rows]


def _encode_cursor(event: Event) -> str:
    return f"{event.created_at}_{event.id}"


def _decode_cursor(cursor: str) -> tuple[str, int]:
    if not _CURSOR.fullmatch(cursor):
        raise InputError.of("cursor", "not a cursor this service gave out")
    created_at, event_id = cursor.rsplit("_", 1)
    return created_at, int(event_id)


# Asked by search: the turns it indexes and ranks, read from capture (capture owns `events`).

_TURN_COLUMNS = "id, entity, channel, author, role, content, session_id, created_at"


def turns_among(
    conn: sqlite3.Connection, ids: list[int], role: str | None = None
) -> list[sqlite3.Row]:
    """The turns among these events (markers are not), of `role` only when given, in time
    order: each row's id, entity, channel, author, role, content, session_id and
    created_at."""
    return conn.execute(
        f"SELECT {_TURN_COLUMNS} FROM events WHERE id IN (SELECT value FROM json_each(?))"
        f" AND {turns_only()} AND (? IS NULL OR role = ?) ORDER BY created_at, id",
        (json.dumps(ids), role, role),
    ).fetchall()


def turns_beside(
    conn: sqlite3.Connection, turn: sqlite3.Row, reach: int, after: bool = True
) -> list[sqlite3.Row]:
    """A turn (a row of `turns_among`) with up to `reach` turns before and (unless `after`
    is false) after it in its conversation: the same session, or the same channel for
    events without a session; in time order."""
    if turn["session_id"] is not None:
        same, key = "session_id = ?", turn["session_id"]
    else:
        same, key = "session_id IS NULL AND channel = ?", turn["channel"]
    where = f"entity = ? AND {same} AND {turns_only()}"
    at = (turn["created_at"], turn["id"])
    before = conn.execute(
        f"SELECT {_TURN_COLUMNS} FROM events WHERE {where} AND (created_at, id) < (?, ?)"
        " ORDER BY created_at DESC, id DESC LIMIT ?",
        (turn["entity"], key, *at, reach),
    ).fetchall()
    later = conn.execute(
        f"SELECT {_TURN_COLUMNS} FROM events WHERE {where} AND (created_at, id) > (?, ?)"
        " ORDER BY created_at, id LIMIT ?",
        (turn["entity"], key, *at, reach if after else 0),
    ).fetchall()
    return [*reversed(before), turn, *later]


def turn_ids(conn: sqlite3.Connection, entity: str) -> Iterator[int]:
    """The ids of the entity's turns, in no order that means anything, read as they are
    consumed (one pass over the index events_by_type, as plain tuples: a million turns
    are neither held nor made into rows)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(f"SELECT id FROM events WHERE entity = ? AND {turns_only()}", (entity,))
    return (row[0] for row in cursor)


def said(conn: sqlite3.Connection, entity: str, ids: list[int]) -> dict[int, sqlite3.Row]:
    """Who said what and when, for these of the entity's events (another entity's are
    not there): id -> its row's id, event_uid, author, content and created_at."""
    return {
        row["id"]: row
        for row in conn.execute(
            "SELECT id, event_uid, author, content, created_at FROM events"
            " WHERE id IN (SELECT value FROM json_each(?)) AND +entity = ?",
            (json.dumps(ids), entity),
        )
    }


# Asked by recall: the role and session of the turns a search found (a search result
# carries only the author): the caller's own session is left out, the rest labelled.
def roles_and_sessions(
    db: Database, entity: str, uids: list[str]
) -> dict[str, tuple[str | None, str | None]]:
    """(role, session_id) of each of these events of the entity's (uids it has not
    stored are left out)."""
    rows = db.conn.execute(
        "SELECT event_uid, role, session_id FROM events WHERE entity = ?"
        " AND event_uid IN (SELECT value FROM json_each(?))",
        (entity, json.dumps(uids)),
    )
    return {uid: (role, session) for uid, role, session in rows}


# Asked by contracts: the reads crystal's summaries and the transcripts make of the events
# (they name no `events` table of their own).

Covered = Sequence[tuple[int, int, str | None]]
"""Inclusive ranges of an entity's event ids that a later layer covers (a summary's), each
of one channel, or of every channel where the channel is None."""


@dataclass(frozen=True)
class Span:
    """Which of an entity's events a read takes: of one channel or of a list of them, ids
    from `low` to `high`, created at or after `since` (and before `before`), every event or
    only turns, markers or superseded turns (engine.capture.markers), and none inside the
    `outside` ranges."""

    entity: str
    channel: str | None = None
    channels: Sequence[str] | None = None
    low: int | None = None
    high: int | None = None
    since: str | None = None
    before: str | None = None
    kind: Literal["event", "turn", "marker", "superseded"] = "event"
    outside: Covered = ()

    def select(self, columns: str) -> tuple[str, list[Any]]:
        """`SELECT columns FROM events e WHERE …` for the span, with its parameters."""
        head = ""
        params: list[Any] = []
        if self.outside:
            head = (
                "WITH covered (low, high, channel) AS MATERIALIZED (SELECT"
                " json_extract(value, '$[0]'), json_extract(value, '$[1]'),"
                " json_extract(value, '$[2]') FROM json_each(?)) "
            )
            params.append(json.dumps([list(r) for r in self.outside]))
        clauses = ["e.entity = ?"]
        params.append(self.entity)
        for clause, value in (
            ("e.channel = ?", self.channel),
            ("e.id >= ?", self.low),
            ("e.id <= ?", self.high),
            ("e.created_at >= ?", self.since),
            ("e.created_at < ?", self.before),
        ):
            if value is not None:
                clauses.append(clause)
                params.append(value)
        if self.channels is not None:
            clauses.append("EXISTS (SELECT 1 FROM json_each(?) c WHERE c.value = e.channel)")
            params.append(json.dumps(list(self.channels)))
        if self.kind != "event":
            kinds = {"turn": turns_only, "marker": markers_only, "superseded": superseded}
            clauses.append(kinds[self.kind]("e."))
        if self.outside:
            clauses.append(
                "NOT EXISTS (SELECT 1 FROM covered c WHERE e.id BETWEEN c.low AND c.high"
                " AND (c.channel IS NULL OR c.channel = e.channel))"
            )
        return f"{head}SELECT {columns} FROM events e WHERE {' AND '.join(clauses)}", params


def count(db: Database, span: Span) -> int:
    """How many events the span holds."""
    query, params = span.select("COUNT(*)")
    found: int = db.conn.execute(query, params).fetchone()[0]
    return found


def extent(db: Database, span: Span) -> tuple[int, str | None, str | None]:
    """How many events the span holds, and its first and last event's `created_at`."""
    query, params = span.select("COUNT(*), MIN(created_at), MAX(created_at)")
    total, first, last = db.conn.execute(query, params).fetchone()
    return total, first, last


def in_span(
    db: Database,
    span: Span,
    by: Literal["id", "time"] = "time",
    newest_first: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> list[Event]:
    """The span's events in id order or in time order (then id), a page of them."""
    query, params = span.select("*")
    direction = "DESC" if newest_first else "ASC"
    order = f"id {direction}" if by == "id" else f"created_at {direction}, id {direction}"
    rows = db.conn.execute(
        f"{query} ORDER BY {order} LIMIT ? OFFSET ?",
        [*params, -1 if limit is None else limit, offset],
    ).fetchall()
    return [Event.from_row(row) for row in rows]


def lines_before(db: Database, span: Span, event: Event) -> int:
    """How many lines the contents of the span's events before this one (in time order,
    then id) hold, counted as `content.split("\\n")` counts them."""
    lines = "COALESCE(SUM(length(content) - length(replace(content, char(10), '')) + 1), 0)"
    query, params = span.select(lines)
    found: int = db.conn.execute(
        f"{query} AND (e.created_at, e.id) < (?, ?)", [*params, event.created_at, event.id]
    ).fetchone()[0]
    return found


# Asked by graph: the events an episode is made of, by id (engine.graph.episodes).
# Each reads by the primary key: `+entity` keeps SQLite off the index on entity, which
# would read every event of the entity (2.6 ms, not 0.2, for 200 ids of 20,000 events).


def without_content(conn: sqlite3.Connection, entity: str, ids: Sequence[int]) -> list[sqlite3.Row]:
    """The entity's events of these ids, oldest first (created_at, id), without their
    content: id, event_uid, channel, event_type, author, role, session_id, created_at,
    received_at, `content_chars`, the length of the content, and `current` (neither
    replaced by an edit nor deleted). On the caller's connection (inside its transaction,
    where it has one)."""
    return conn.execute(
        "SELECT id, event_uid, channel, event_type, author, role, session_id, created_at,"
        f" received_at, length(content) AS content_chars, {current()} AS current FROM events"
        " WHERE id IN (SELECT value FROM json_each(?)) AND +entity = ?"
        " ORDER BY created_at, id",
        (json.dumps(list(ids)), entity),
    ).fetchall()


def by_ids(db: Database, entity: str, ids: Sequence[int]) -> dict[int, Event]:
    """The entity's events of these ids, by id (another entity's are not there)."""
    rows = db.conn.execute(
        "SELECT * FROM events WHERE id IN (SELECT value FROM json_each(?)) AND +entity = ?",
        (json.dumps(list(ids)), entity),
    )
    return {row["id"]: Event.from_row(row) for row in rows}


def uids(db: Database, entity: str, ids: Sequence[int]) -> dict[int, str]:
    """The event_uid of each of the entity's events of these ids, by id."""
    rows = db.conn.execute(
        "SELECT id, event_uid FROM events WHERE id IN (SELECT value FROM json_each(?))"
        " AND +entity = ?",
        (json.dumps(list(ids)), entity),
    )
    return {row[0]: row[1] for row in rows}
