"""Turns grouped into episodes, the unit the graph is fed in.

Why: one Graphiti `add_episode` makes 4-9 LLM calls, so turns are batched by session
window (the session_id, else the channel) up to a number of turns and characters, and
a window that stays quiet for the idle gap is closed. What happens to an event:
1. `admit` is told of new events inside their own transaction (capture tells its
   listeners, see engine.runtime): each turn now waits in its window (`graph_pending`).
2. `close_windows` (run every few seconds by the graph's sweeper, and by replay) cuts
   each window into episodes; a finished one is recorded with the events it covers, and
   ONE `graph_episode` job is enqueued for it, in one transaction. The grouping is
   decided there, once: a retry, a reclaimed job or a replay never regroups.
3. The job's handler (`engine.graph.texture.handler`) loads the episode with `load` and adds
   it to the graph under its uuid, derived from the entity and its event uids.

Notes and triplets given through texture_add / texture_add_triplet are events on the
`texture` channel and become an episode each, at once.
"""

from __future__ import annotations

import json
import sqlite3
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from engine.capture import events as capture
from engine.kernel import timestamps
from engine.store import queue
from engine.store.db import Database
from engine.store.ticker import Ticker

JOB_KIND = "graph_episode"
FORGET_JOB = "graph_forget"
"""Remove a withdrawn episode from the graph (engine.graph.texture.forget_handler)."""
TEXTURE_CHANNEL = "texture"
SINGLE_KINDS = {"note": "note", "triplet": "triplet"}
"""event_type on the texture channel -> episode kind; such an event is an episode alone."""

_NAMESPACE = uuidlib.UUID("6f1c7e0a-3a51-4c55-9d1e-2b0f5c8a9e11")
_CUT = "… [cut {} characters]"


@dataclass(frozen=True)
class Window:
    """How turns are batched: most turns and characters, and the idle gap (seconds)."""

    max_turns: int = 20
    max_chars: int = 12_000
    idle_s: float = 600.0
    clock: Callable[[], datetime] = field(
        default=lambda: datetime.now(UTC), repr=False, compare=False
    )
    """The time a window's quiet is measured by (tests pass a clock they move)."""

    @classmethod
    def from_settings(cls, settings) -> Window:
        return cls(
            max_turns=settings.graph_episode_max_turns,
            max_chars=settings.graph_episode_max_chars,
            idle_s=settings.graph_episode_idle_s,
        )


def session_key(channel: str, session_id: str | None) -> str:
    """The window an event belongs to (migration 0010 computes the same in SQL)."""
    return f"session:{session_id}" if session_id is not None else f"channel:{channel}"


def admit(batch: capture.Captured) -> None:
    """(A capture listener.) Put a batch's new turns in their windows, inside the events'
    transaction. Markers (a session started, a context compacted) say nothing to extract
    facts from, nor does a message deleted or edited before it arrived (an import, a spool
    sent late)."""
    batch.conn.executemany(
        "INSERT INTO graph_pending (event_id, entity, session_key) VALUES (?, ?, ?)"
        " ON CONFLICT (event_id) DO NOTHING",
        [
            (event.id, batch.entity, session_key(event.channel, event.session_id))
            for event in batch.turns()
        ],
    )


def episode_uuid(entity: str, event_uids: list[str]) -> str:
    """Derived, so the same events always make the same episode."""
    return str(uuidlib.uuid5(_NAMESPACE, "\n".join([entity, *event_uids])))


@dataclass
class _Turn:
    id: int
    uid: str
    kind: str | None
    chars: int
    created_at: str
    received_at: str


def close_windows(db: Database, window: Window, *, force: bool = False) -> list[str]:
    """Close every finished episode (all open ones with `force`); return their uuids.

    A window is cut before a turn that would pass the turn or character limit, and at a
    gap longer than the idle gap between turns (imported history). Its last episode stays
    open until it is full or nothing arrived in the window for the idle gap.
    """
    windows = db.conn.execute("SELECT DISTINCT entity, session_key FROM graph_pending").fetchall()
    closed: list[str] = []
    for entity, key in windows:
        with db.write() as conn:
            closed += _close_window(conn, entity, key, window, force)
    return closed


def _close_window(
    conn: sqlite3.Connection, entity: str, key: str, window: Window, force: bool
) -> list[str]:
    pending = conn.execute(
        "SELECT event_id FROM graph_pending WHERE entity = ? AND session_key = ?", (entity, key)
    )
    rows = capture.without_content(conn, entity, [row[0] for row in pending])
    turns = [
        _Turn(
            id=r["id"],
            uid=r["event_uid"],
            kind=_single_kind(r),
            chars=min(_line_chars(r), window.max_chars),
            created_at=r["created_at"],
            received_at=r["received_at"],
        )
        for r in rows
    ]
    chunks: list[list[_Turn]] = []
    current: list[_Turn] = []
    for turn in turns:
        if turn.kind is not None:
            chunks.append([turn])
            continue
        if current and (
            len(current) >= window.max_turns
            or sum(t.chars for t in current) + turn.chars > window.max_chars
            or timestamps.seconds_between(current[-1].created_at, turn.created_at) > window.idle_s
        ):
            chunks.append(current)
            current = []
        current.append(turn)
    if current:
        now = window.clock().strftime(timestamps.FORMAT)
        waited = timestamps.seconds_between(max(t.received_at for t in current), now)
        quiet = waited >= window.idle_s
        if force or quiet or len(current) >= window.max_turns:
            chunks.append(current)
    return [_record(conn, entity, key, chunk) for chunk in chunks]


def _line_chars(event: sqlite3.Row) -> int:
    """The length of the event's line in an episode (`load`): `speaker: text`."""
    speaker = next(s for s in (event["author"], event["role"], event["channel"]) if s is not None)
    return len(speaker) + 2 + event["content_chars"]


def _record(conn: sqlite3.Connection, entity: str, key: str, chunk: list[_Turn]) -> str:
    uid = episode_uuid(entity, [t.uid for t in chunk])
    # An event is in one episode: the other turns of a withdrawn one (a forget, an edit)
    # move to this. The same events may have made this very episode before, withdrawn
    # since: it is added again, as a new job.
    conn.execute(
        "DELETE FROM episode_events WHERE event_id IN (SELECT value FROM json_each(?))",
        (json.dumps([t.id for t in chunk]),),
    )
    again = conn.execute("SELECT 1 FROM episodes WHERE uuid = ?", (uid,)).fetchone()
    if again:
        conn.execute(
            "UPDATE episodes SET deleted_at = NULL, ingested_at = NULL WHERE uuid = ?", (uid,)
        )
    else:
        conn.execute(
            "INSERT INTO episodes (uuid, entity, session_key, kind, turns, chars, started_at,"
            " ended_at, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                uid,
                entity,
                key,
                chunk[0].kind or "turns",
                len(chunk),
                sum(t.chars for t in chunk),
                chunk[0].created_at,
                chunk[-1].created_at,
                timestamps.now(),
            ),
        )
    conn.executemany(
        "INSERT INTO episode_events (episode_uuid, position, event_id) VALUES (?, ?, ?)",
        [(uid, n, t.id) for n, t in enumerate(chunk)],
    )
    conn.executemany("DELETE FROM graph_pending WHERE event_id = ?", [(t.id,) for t in chunk])
    job = f"{uid}:{timestamps.now()}" if again else uid
    queue.enqueue(conn, entity, JOB_KIND, job, {"episode": uid})
    return uid


@dataclass
class Episode:
    """An episode as the graph gets it: its text is rendered from its events."""

    uuid: str
    entity: str
    kind: str
    session_key: str
    started_at: str
    ended_at: str
    event_uids: list[str]
    body: str
    truncated: bool
    triplet: dict[str, Any] | None

    @property
    def reference_time(self) -> datetime:
        return timestamps.parse(self.started_at)

    @property
    def name(self) -> str:
        return f"{self.session_key} {self.started_at}"

    @property
    def source_description(self) -> str:
        return f"pps {self.kind} from {self.session_key}"


def load(db: Database, uuid: str, max_chars: int) -> Episode | None:
    """The episode and its events, rendered as `speaker: text` lines (None if it is not
    recorded, or was deleted from the graph)."""
    head = db.conn.execute("SELECT * FROM episodes WHERE uuid = ?", (uuid,)).fetchone()
    if head is None or head["deleted_at"] is not None:
        return None
    ids = [
        row[0]
        for row in db.conn.execute(
            "SELECT event_id FROM episode_events WHERE episode_uuid = ? ORDER BY position", (uuid,)
        )
    ]
    found = capture.by_ids(db, head["entity"], ids)
    events = [found[i] for i in ids if i in found]
    lines, truncated = [], False
    for e in events:
        line = f"{e.author or e.role or e.channel}: {e.content}"
        if len(line) > max_chars:
            cut = len(line) - max_chars
            line, truncated = line[:max_chars] + _CUT.format(cut), True
        lines.append(line)
    triplet = None
    if head["kind"] == "triplet" and events:
        triplet = {**events[0].metadata, "fact": events[0].content}
    return Episode(
        uuid=uuid,
        entity=head["entity"],
        kind=head["kind"],
        session_key=head["session_key"],
        started_at=head["started_at"],
        ended_at=head["ended_at"],
        event_uids=[e.event_uid for e in events],
        body="\n".join(lines),
        truncated=truncated,
        triplet=triplet,
    )


@dataclass
class Withdrawn:
    """What `withdraw` did: the episodes taken out (each with a `graph_forget` job), the
    episodes made again of what they had besides (each queued to be extracted), and how
    many turns left a window still open."""

    episodes: list[str] = field(default_factory=list)
    again: list[str] = field(default_factory=list)
    pending: int = 0


def withdraw(conn: sqlite3.Connection, entity: str, event_ids: list[int]) -> Withdrawn:
    """Take these events out of layer 3 (inside the caller's transaction): out of the
    windows still open; every episode holding one is marked deleted (its job, if it has
    not run, then adds nothing; if it is running, it takes out what it added) and gets a
    `graph_forget` job, which removes it from the graph with the facts only it supported.
    The rest of its events, still current turns, make an episode again, extracted anew:
    the facts they support come back with them, as facts of their own."""
    done = Withdrawn()
    if not event_ids:
        return done
    wanted = json.dumps(event_ids)
    done.pending = conn.execute(
        "DELETE FROM graph_pending WHERE entity = ? AND event_id IN (SELECT value FROM"
        " json_each(?))",
        (entity, wanted),
    ).rowcount
    held = conn.execute(
        "SELECT DISTINCT ep.uuid, ep.session_key FROM episodes ep"
        " JOIN episode_events ee ON ee.episode_uuid = ep.uuid"
        " WHERE ep.entity = ? AND ep.deleted_at IS NULL"
        " AND ee.event_id IN (SELECT value FROM json_each(?)) ORDER BY ep.started_at, ep.uuid",
        (entity, wanted),
    ).fetchall()
    now = timestamps.now()
    gone = set(event_ids)
    for episode in held:
        uuid = episode["uuid"]
        conn.execute("UPDATE episodes SET deleted_at = ? WHERE uuid = ?", (now, uuid))
        done.episodes.append(uuid)
        # Whether the graph holds it or not (a job may be adding it, or have added part
        # of it before a crash), the removal finds out and takes what is there.
        queue.enqueue(conn, entity, FORGET_JOB, f"{uuid}:{now}", {"episode": uuid})
        rest = [
            row[0]
            for row in conn.execute(
                "SELECT event_id FROM episode_events WHERE episode_uuid = ? ORDER BY position",
                (uuid,),
            )
            if row[0] not in gone
        ]
        rows = [r for r in capture.without_content(conn, entity, rest) if r["current"]]
        if rows:
            turns = [
                _Turn(
                    id=r["id"],
                    uid=r["event_uid"],
                    kind=None if len(rows) > 1 else _single_kind(r),
                    chars=_line_chars(r),
                    created_at=r["created_at"],
                    received_at=r["received_at"],
                )
                for r in rows
            ]
            done.again.append(_record(conn, entity, episode["session_key"], turns))
    return done


def holding(conn: sqlite3.Connection, entity: str, event_ids: list[int]) -> int:
    """How many episodes not withdrawn hold any of these events."""
    (count,) = conn.execute(
        "SELECT count(DISTINCT ep.uuid) FROM episodes ep JOIN episode_events ee"
        " ON ee.episode_uuid = ep.uuid WHERE ep.entity = ? AND ep.deleted_at IS NULL"
        " AND ee.event_id IN (SELECT value FROM json_each(?))",
        (entity, json.dumps(event_ids)),
    ).fetchone()
    return int(count)


def _single_kind(row: sqlite3.Row) -> str | None:
    return SINGLE_KINDS.get(row["event_type"]) if row["channel"] == TEXTURE_CHANNEL else None


def mark_ingested(db: Database, uuid: str, truncated: bool) -> None:
    with db.write() as conn:
        conn.execute(
            "UPDATE episodes SET ingested_at = COALESCE(ingested_at, ?), truncated = ?"
            " WHERE uuid = ?",
            (timestamps.now(), int(truncated), uuid),
        )


def mark_deleted(db: Database, entity: str, uuid: str) -> None:
    with db.write() as conn:
        conn.execute(
            "UPDATE episodes SET deleted_at = ? WHERE uuid = ? AND entity = ?",
            (timestamps.now(), uuid, entity),
        )


def trace(db: Database, entity: str, episode_uuids: list[str]) -> dict[str, list[str]]:
    """episode uuid -> the uids of the events it covers (only this entity's)."""
    found: dict[str, list[str]] = {}
    for start in range(0, len(episode_uuids), 500):
        batch = episode_uuids[start : start + 500]
        marks = ",".join("?" * len(batch))
        rows = db.conn.execute(
            "SELECT ee.episode_uuid, ee.event_id FROM episode_events ee"
            " JOIN episodes ep ON ep.uuid = ee.episode_uuid"
            f" WHERE ep.entity = ? AND ee.episode_uuid IN ({marks})"
            " ORDER BY ee.episode_uuid, ee.position",
            [entity, *batch],
        ).fetchall()
        uids = capture.uids(db, entity, [event_id for _, event_id in rows])
        for episode, event_id in rows:
            if event_id in uids:
                found.setdefault(episode, []).append(uids[event_id])
    return found


def closed(db: Database, entity: str) -> list[str]:
    """Every closed episode of an entity, oldest first, but those deleted from the graph
    (what a replay adds again)."""
    rows = db.conn.execute(
        "SELECT uuid FROM episodes WHERE entity = ? AND deleted_at IS NULL"
        " ORDER BY started_at, closed_at, uuid",
        (entity,),
    )
    return [row[0] for row in rows]


def sweeper(db: Database, window: Window, interval: float, on_tick=None) -> Ticker:
    """Closes finished windows every `interval` seconds (then calls `on_tick`)."""

    def sweep() -> None:
        close_windows(db, window)
        if on_tick is not None:
            on_tick()

    return Ticker("episode-sweeper", interval, sweep)


# --- replay ---


def replay(db: Database, window: Window, entity: str) -> int:
    """Queue every recorded episode of the entity for the graph again, oldest first,
    after closing every window (nothing waits for an idle gap). Episodes already in the
    graph are skipped by the handler; the grouping is the recorded one, so the episodes
    are the same. Returns the replay's number; see `replay_progress`."""
    close_windows(db, window, force=True)
    uuids = closed(db, entity)
    with db.write() as conn:
        open_replay = _unfinished_replay(conn, entity)
        if open_replay is not None:
            return open_replay  # resume it: its jobs are still queued
        number = conn.execute(
            "INSERT INTO graph_replays (entity, episodes, started_at) VALUES (?, ?, ?)"
            " RETURNING id",
            (entity, len(uuids), timestamps.now()),
        ).fetchone()[0]
        for uuid in uuids:
            queue.enqueue(conn, entity, JOB_KIND, uuid + _replay_key(number), {"episode": uuid})
    return number


def replay_progress(db: Database, number: int) -> dict[str, Any]:
    """How far a replay is: its jobs by state."""
    entity, total = db.conn.execute(
        "SELECT entity, episodes FROM graph_replays WHERE id = ?", (number,)
    ).fetchone()
    counts = queue.counts(db.conn, JOB_KIND, entity, key_suffix=_replay_key(number))
    return {"entity": entity, "total": total, **counts}


def _unfinished_replay(conn: sqlite3.Connection, entity: str) -> int | None:
    """The entity's newest replay with jobs still to finish, if any."""
    numbers = conn.execute(
        "SELECT id FROM graph_replays WHERE entity = ? ORDER BY id DESC", (entity,)
    ).fetchall()
    for (number,) in numbers:
        left = queue.counts(
            conn, JOB_KIND, entity, states=queue.UNFINISHED, key_suffix=_replay_key(number)
        )
        if any(left.values()):
            return number
    return None


def _replay_key(number: int) -> str:
    """How the keys of a replay's jobs end."""
    return f"/replay-{number}"
