"""The longform tier: raw turns (layer-1 events) as search rows.

A captured event becomes a row of the search index in the same transaction that stores
it (`admit`, told of it by capture), so its own words are searchable at once. One
`embed_events` job per request, in the durable queue, then gives the new turns their
context and their vectors, within seconds: a request of a few turns is embedded at the
priority of a query, ahead of any backlog of files (a long file, another entity's home).

A turn is ranked as `[8 May 2023] Caroline: text`: the date and the speaker are words
people ask with. Its BM25 context is its neighbours, the PPS_SEARCH_TURN_CONTEXT turns before and
after it in the same session (or channel, without one), because a question often names
words said just before or after the answer; its own words count twice as much (see
migrations/0005; measured on LoCoMo in bench/locomo.py). A new turn also changes the
context of the turns before it. Contexts are written by the job, not at capture: they
hold several turns' words each, and indexing them would make capture several times
slower.

Markers (engine.capture.markers: a session started, a context compacted) are events but
not turns: they get no row, and are no turn's neighbours.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from itertools import islice
from typing import NamedTuple

from engine.capture import events
from engine.kernel import timestamps
from engine.search import embeddings, vectors
from engine.search.chunk_store import content_hash, embed_hash
from engine.search.index import Index
from engine.store import queue

JOB_KIND = "embed_events"
_CONTEXT_BATCH = 200
_BACKFILL_PAGE = 5_000  # turns a backfill looks at a query: it runs at every rescan


def admit(batch: events.Captured) -> None:
    """(A capture listener.) Index a batch's new turns by their own words, inside the
    transaction that stored them, and enqueue one job for their context and vectors.
    Markers are left out."""
    found = batch.turns()
    if not found:
        return
    _index(batch.conn, batch.entity, [_Turn.of(event) for event in found])
    ids = [event.id for event in found]
    queue.enqueue(batch.conn, batch.entity, JOB_KIND, str(ids[0]), {"event_ids": ids})


class _Turn(NamedTuple):
    """What a turn's search row is made of."""

    id: int
    created_at: str
    channel: str
    author: str | None
    content: str

    @classmethod
    def of(cls, event: events.Event) -> _Turn:
        return cls(event.id, event.created_at, event.channel, event.author, event.content)


def _index(conn: sqlite3.Connection, entity: str, found: Sequence[_Turn]) -> None:
    """Write these turns' search rows (one they have already is kept)."""
    rows = []
    for turn in found:
        body = render(turn.created_at, turn.author, turn.content)
        rows.append(
            (
                entity,
                turn.id,
                turn.created_at,
                turn.channel,
                content_hash(turn.content),
                embed_hash("turn", body, ""),
                body,
            )
        )
    conn.executemany(
        "INSERT INTO search_chunks (entity, tier, kind, event_id, date, channel, content_hash,"
        " embed_hash, body) VALUES (?, 'longform', 'turn', ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (event_id) DO NOTHING",
        rows,
    )


def admit_stored(conn: sqlite3.Connection, entity: str, event_ids: list[int]) -> None:
    """Index events of the entity's stored before (a backfill): the turns among these ids,
    read from capture, get their search rows; their context and vectors are the caller's
    to ask for."""
    found = events.turns_among(conn, event_ids)
    _index(
        conn,
        entity,
        [_Turn(t["id"], t["created_at"], t["channel"], t["author"], t["content"]) for t in found],
    )


def add_context(index: Index, entity: str, event_ids: list[int]) -> None:
    """Write the neighbours of these turns into their context, and refresh the context of
    the turns around them, which now have new neighbours. In short transactions, so
    captures are not held up behind a long job."""
    reach = index.settings.search_turn_context
    for start in range(0, len(event_ids), _CONTEXT_BATCH):
        with index.db.write() as conn:
            contexts: dict[int, str] = {}
            for event in events.turns_among(conn, event_ids[start : start + _CONTEXT_BATCH]):
                window = events.turns_beside(conn, event, 2 * reach)
                at = next(i for i, e in enumerate(window) if e["id"] == event["id"])
                for i in range(max(0, at - reach), min(len(window), at + reach + 1)):
                    contexts[window[i]["id"]] = _context(window, i, reach)
            conn.executemany(
                "UPDATE search_chunks SET context = ? WHERE event_id = ? AND context IS NOT ?",
                [(text, event_id, text) for event_id, text in contexts.items()],
            )


def backfill(index: Index, entity: str, batch: int = 500) -> int:
    """Admit events stored before the index held turns (or after it was dropped), with
    their context; vectors follow from `Index.embed_missing`. Capture's turns are looked
    up in the index a page at a time (this runs at every rescan), then the missing ones
    admitted `batch` at a time, oldest first."""
    every, missing = events.turn_ids(index.db.conn, entity), []
    while page := list(islice(every, _BACKFILL_PAGE)):
        missing += [
            r[0]
            for r in index.db.conn.execute(
                "SELECT value FROM json_each(?) WHERE NOT EXISTS"
                " (SELECT 1 FROM search_chunks WHERE event_id = value)",
                (json.dumps(page),),
            )
        ]
    missing.sort()
    for start in range(0, len(missing), batch):
        admitting = missing[start : start + batch]
        with index.db.write() as conn:
            admit_stored(conn, entity, admitting)
        add_context(index, entity, admitting)
    return len(missing)


def handler(index: Index):
    """The embed_events job: context and vectors for the turns it names. No model → the
    job waits (search ranks by BM25 meanwhile) until `pps queue retry` or a restart."""

    def embed_events(job: queue.Job) -> None:
        ids = [int(i) for i in job.payload.get("event_ids", [])]
        if not ids:
            return
        add_context(index, job.entity, ids)
        chunk_ids = [
            r[0]
            for r in index.db.conn.execute(
                "SELECT id FROM search_chunks WHERE entity = ? AND event_id IN"
                " (SELECT value FROM json_each(?))",
                (job.entity, json.dumps(ids)),
            )
        ]
        try:
            index.embed_missing(job.entity, chunk_ids, urgent=True)
        except embeddings.Unavailable as exc:
            raise queue.Pause(str(exc)) from exc

    return embed_events


def rows_of(conn: sqlite3.Connection, entity: str, event_ids: list[int]) -> int:
    """How many search rows these events have (a forgotten one has none)."""
    (count,) = conn.execute(
        "SELECT count(*) FROM search_chunks WHERE entity = ?"
        " AND event_id IN (SELECT value FROM json_each(?))",
        (entity, json.dumps(event_ids)),
    ).fetchone()
    return int(count)


def render(created_at: str, author: str | None, content: str) -> str:
    """A turn as it is ranked and embedded: `[8 May 2023] Caroline: text`."""
    moment = timestamps.parse(created_at)
    day = f"{moment.day} {moment:%B %Y}"
    return f"[{day}] {author}: {content}" if author else f"[{day}] {content}"


def with_previous(conn, event_ids: list[int]) -> dict[int, str]:
    """Each of these turns as `author: text`, after the turn before it in its
    conversation where that is someone else's: a reply with what it replies to (the
    reranker reads them so). A turn after the same author's own is read alone: it
    continues, and the turn before would lend it words it does not say."""
    read = {}
    for event in events.turns_among(conn, event_ids):
        window = events.turns_beside(conn, event, 1, after=False)
        if len(window) == 2 and window[0]["author"] == event["author"]:
            window = window[1:]
        read[event["id"]] = "\n".join(
            f"{e['author']}: {e['content']}" if e["author"] else e["content"] for e in window
        )
    return read


def _context(window: list[sqlite3.Row], i: int, reach: int) -> str:
    lo, hi = max(0, i - reach), min(len(window), i + reach + 1)
    return "\n".join(
        render(e["created_at"], e["author"], e["content"])
        for j, e in enumerate(window[lo:hi], start=lo)
        if j != i
    )


def forget(
    conn: sqlite3.Connection, entity: str, event_ids: list[int], said: Sequence[str] = ()
) -> int:
    """Drop the search rows (and vectors) of turns that stopped being current: replaced
    by an edit, deleted or forgotten (inside the caller's transaction; the generation bump
    tells a process holding the entity's vectors to load them again). The turns whose
    context held what they `said` (their neighbours) have it emptied, and a job writes it
    again from the turns around them now. How many rows went."""
    if not event_ids:
        return 0
    wanted = json.dumps(event_ids)
    chunks = (
        "SELECT id FROM search_chunks WHERE entity = ?"
        " AND event_id IN (SELECT value FROM json_each(?))"
    )
    conn.execute(
        f"DELETE FROM search_vectors WHERE entity = ? AND chunk_id IN ({chunks})",
        (entity, entity, wanted),
    )
    dropped = conn.execute(
        "DELETE FROM search_chunks WHERE entity = ?"
        " AND event_id IN (SELECT value FROM json_each(?)) RETURNING id",
        (entity, wanted),
    ).fetchall()
    if dropped:
        vectors.bump(conn, entity)
    neighbours = sorted(
        {
            row[0]
            for text in {t for t in said if t}
            for row in conn.execute(
                "UPDATE search_chunks SET context = '' WHERE entity = ? AND kind = 'turn'"
                " AND instr(context, ?) > 0 RETURNING event_id",
                (entity, text),
            )
        }
    )
    if neighbours:
        key = f"context:{neighbours[0]}:{timestamps.now()}"
        queue.enqueue(conn, entity, JOB_KIND, key, {"event_ids": neighbours})
    return len(dropped)
