"""A conversation as it changes: an edit replaces the message it names
(`metadata.replaces`, its event_uid), a deletion tombstones it (`metadata.deletes`). Every
version stays in layer 1; the marks (`replaced_by`, `deleted_at`, migrations/0008) say which
one is current, and `engine.capture.markers.turns_only` leaves the others out of every read
of turns. A forgotten message (engine.forgetting) keeps its versions as tombstones: `blank`
empties their text and metadata, and they count as deleted from then on."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

NAMING = "coalesce(json_extract(metadata, '$.replaces'), json_extract(metadata, '$.deletes'))"
"""What an edit or deletion names: the expression migrations/0008's index holds."""


def is_change(event_type: str) -> bool:
    """Whether an event of this type changes the message it names: an edit, a deletion."""
    return event_type in ("edit", "delete")


@dataclass
class Marked:
    """What `supersede` marked: every version given marks anew, by id, (`replaced_by`,
    `deleted_at`); and the ids that stopped being current by them, for search to drop
    their rows."""

    marks: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)
    gone: list[int] = field(default_factory=list)


def supersede(
    conn: sqlite3.Connection, entity: str, messages: Sequence[str], named: Sequence[Any]
) -> Marked:
    """(Capture's, in a batch's transaction, before its listeners hear of it.) Mark what
    the new events change: every version of a message but its newest edit gets
    `replaced_by` (that edit's uid), every version of a deleted one `deleted_at` (its first
    deletion's time). `named`: what the batch's edits and deletions name; `messages`: the
    uids its clients gave its other events, which an edit or deletion stored before them
    may name (a message stored after its edit or deletion, an import, a spool sent late,
    is marked as it arrives). A uid capture made up just now no earlier event can name."""
    originals = {name for name in named if name}
    if messages:
        originals |= {
            row[0]
            for row in conn.execute(
                f"SELECT DISTINCT {NAMING} FROM events WHERE entity = ?"
                f" AND event_type IN ('edit', 'delete') AND {NAMING} IN"
                " (SELECT value FROM json_each(?))",
                (entity, json.dumps(list(messages))),
            )
        }
    marked = Marked()
    for original in sorted(originals):
        for version_id, marks, ended in _mark_versions(conn, entity, original):
            marked.marks[version_id] = marks
            if ended:
                marked.gone.append(version_id)
    return marked


_VERSION = (
    "SELECT id, event_uid, event_type, created_at, replaced_by, deleted_at,"
    " json_extract(metadata, '$.forgotten') AS forgotten FROM events"
)


def _mark_versions(
    conn: sqlite3.Connection, entity: str, original: str
) -> list[tuple[int, tuple[str | None, str | None], bool]]:
    """Mark the versions of the message `original`: each version marked anew, with its
    marks and whether it stopped being current by them."""
    changes = conn.execute(
        f"{_VERSION} WHERE entity = ? AND event_type IN ('edit', 'delete') AND {NAMING} = ?",
        (entity, original),
    ).fetchall()
    if not changes:
        return []
    first = conn.execute(
        f"{_VERSION} WHERE entity = ? AND event_uid = ?", (entity, original)
    ).fetchall()
    versions = sorted(
        [*first, *(c for c in changes if c["event_type"] == "edit")],
        key=lambda v: (v["created_at"], v["id"]),
    )
    deletions = [c["created_at"] for c in changes if c["event_type"] == "delete"]
    newest = versions[-1]["event_uid"] if versions else None
    marked = []
    for version in versions:
        replaced_by = None if version["event_uid"] == newest else newest
        ended = [*deletions, *([version["forgotten"]] if version["forgotten"] else [])]
        deleted_at = min(ended) if ended else None
        if (version["replaced_by"], version["deleted_at"]) == (replaced_by, deleted_at):
            continue
        conn.execute(
            "UPDATE events SET replaced_by = ?, deleted_at = ? WHERE id = ?",
            (replaced_by, deleted_at, version["id"]),
        )
        was_current = version["replaced_by"] is None and version["deleted_at"] is None
        now_gone = replaced_by is not None or deleted_at is not None
        marked.append((version["id"], (replaced_by, deleted_at), was_current and now_gone))
    return marked


def versions_of(conn: sqlite3.Connection, entity: str, event_uid: str) -> list[int]:
    """The ids of every stored version of the message `event_uid` is one of: the original,
    its edits, the deletions naming it (an edit or deletion given names its original).
    Empty if the entity has no such event."""
    row = conn.execute(
        f"SELECT event_type, {NAMING} AS names FROM events WHERE entity = ? AND event_uid = ?",
        (entity, event_uid),
    ).fetchone()
    if row is None:
        return []
    original = row["names"] if row["event_type"] in ("edit", "delete") and row["names"] else None
    original = original or event_uid
    return [
        r[0]
        for r in conn.execute(
            f"SELECT id FROM events WHERE entity = ? AND (event_uid = ? OR {NAMING} = ?)"
            " ORDER BY id",
            (entity, original, original),
        )
    ]


def blank(conn: sqlite3.Connection, entity: str, ids: list[int], at: str) -> None:
    """Empty the text and metadata of these events, keeping who said them, where and
    when, what an edit or deletion names, and `forgotten` (the time): tombstones. They
    count as deleted from `at` on (their search rows go with `turns.forget`)."""
    conn.execute(
        "UPDATE events SET content = '', deleted_at = coalesce(deleted_at, ?),"
        " metadata = json_patch(json_object('forgotten', ?), json_object("
        "'replaces', json_extract(metadata, '$.replaces'),"
        " 'deletes', json_extract(metadata, '$.deletes')))"
        " WHERE entity = ? AND id IN (SELECT value FROM json_each(?))",
        (at, at, entity, _among(ids)),
    )


# Asked by forgetting (engine.forgetting): what it needs to know of the events it forgets.


def _among(ids: list[int]) -> str:
    return json.dumps(ids)


def texts(conn: sqlite3.Connection, entity: str, ids: list[int]) -> list[str]:
    """The text of each of these events that still has one."""
    return [
        row[0]
        for row in conn.execute(
            "SELECT content FROM events WHERE entity = ? AND id IN (SELECT value FROM"
            " json_each(?)) AND content != '' ORDER BY id",
            (entity, _among(ids)),
        )
    ]


def uids(conn: sqlite3.Connection, entity: str, ids: list[int]) -> set[str]:
    return {
        row[0]
        for row in conn.execute(
            "SELECT event_uid FROM events WHERE entity = ? AND id IN (SELECT value FROM"
            " json_each(?))",
            (entity, _among(ids)),
        )
    }


def placed(conn: sqlite3.Connection, entity: str, ids: list[int]) -> list[tuple[int, str]]:
    """(id, channel) of each of these events: what says which summaries cover them."""
    return [
        (row[0], row[1])
        for row in conn.execute(
            "SELECT id, channel FROM events WHERE entity = ? AND id IN (SELECT value FROM"
            " json_each(?)) ORDER BY id",
            (entity, _among(ids)),
        )
    ]


def originals(conn: sqlite3.Connection, entity: str, ids: list[int]) -> list[str]:
    """The uids of the messages these events are versions of, in the order stored."""
    rows = conn.execute(
        "SELECT CASE WHEN event_type IN ('edit', 'delete')"
        f" THEN coalesce({NAMING}, event_uid) ELSE event_uid END FROM events"
        " WHERE entity = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY id",
        (entity, _among(ids)),
    )
    return list(dict.fromkeys(row[0] for row in rows))


def deleted_among(conn: sqlite3.Connection, entity: str, ids: list[int]) -> list[int]:
    """Which of these events are deleted (or forgotten)."""
    return [
        row[0]
        for row in conn.execute(
            "SELECT id FROM events WHERE entity = ? AND deleted_at IS NOT NULL"
            " AND id IN (SELECT value FROM json_each(?)) ORDER BY id",
            (entity, _among(ids)),
        )
    ]


def deleted_in(conn: sqlite3.Connection, entity: str, original: str) -> str | None:
    """The channel of the first deletion of the message `original`, if one was stored."""
    row = conn.execute(
        "SELECT channel FROM events WHERE entity = ? AND event_type = 'delete'"
        " AND json_extract(metadata, '$.deletes') = ? ORDER BY id LIMIT 1",
        (entity, original),
    ).fetchone()
    return row[0] if row else None


def with_text(conn: sqlite3.Connection, entity: str, ids: list[int]) -> int:
    """How many of these events still hold text (a forgotten one holds none)."""
    (count,) = conn.execute(
        "SELECT count(*) FROM events WHERE entity = ? AND content != ''"
        " AND id IN (SELECT value FROM json_each(?))",
        (entity, _among(ids)),
    ).fetchone()
    return int(count)
