"""Raw capture's part of `pps check`: the entity's events counted (turns and markers), and
what the layers built on the events ask of them: which turns there are, which of the
events they point at are gone, what a range of events still holds.

Events are source data: the check never repairs them; the layers above report what points
at an event that is gone, and drop their own rows where that is safe.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from engine.capture.markers import markers_only, turns_only
from engine.store.check import Findings
from engine.store.db import Database


def events(findings: Findings, db: Database) -> None:
    """Count the entity's events, its markers and its turns (the events that are not)."""
    (total,) = db.conn.execute(
        "SELECT COUNT(*) FROM events WHERE entity = ?", (findings.entity,)
    ).fetchone()
    (markers,) = db.conn.execute(
        f"SELECT COUNT(*) FROM events WHERE entity = ? AND {markers_only()}", (findings.entity,)
    ).fetchone()
    findings.counts.update(events=total, markers=markers, turns=total - markers)


def turn_ids(db: Database, entity: str) -> list[int]:
    """The ids of the entity's turns (its events that are not markers), in order."""
    return [
        r[0]
        for r in db.conn.execute(
            f"SELECT id FROM events WHERE entity = ? AND {turns_only()} ORDER BY id", (entity,)
        )
    ]


def gone(db: Database, ids: Iterable[int], entity: str | None = None) -> set[int]:
    """Which of these ids are no event (of `entity`, when given)."""
    mine = "" if entity is None else " AND e.entity = ?"
    return {
        r[0]
        for r in db.conn.execute(
            "SELECT x.value FROM json_each(?) x WHERE NOT EXISTS"
            f" (SELECT 1 FROM events e WHERE e.id = x.value{mine})",
            (json.dumps(sorted(set(ids))), *(() if entity is None else (entity,))),
        )
    }


def in_ranges(
    db: Database, entity: str, ranges: Sequence[tuple[int, int, list[str] | None]]
) -> list[tuple[int, int]]:
    """For each range of event ids (start, end, the channels it covers or None for all):
    how many of its two ends (one when start is end) are the entity's events, and how
    many of the entity's events on those channels lie in it now."""
    rows = db.conn.execute(
        "SELECT"
        " (SELECT COUNT(*) FROM events e WHERE e.entity = ?1 AND e.id IN (r.first, r.last)),"
        " (SELECT COUNT(*) FROM events e WHERE e.entity = ?1"
        "  AND e.id BETWEEN r.first AND r.last AND (r.channels IS NULL"
        "  OR e.channel IN (SELECT value FROM json_each(r.channels))))"
        " FROM (SELECT x.key, json_extract(x.value, '$[0]') AS first,"
        "  json_extract(x.value, '$[1]') AS last, json_extract(x.value, '$[2]') AS channels"
        "  FROM json_each(?2) x) r ORDER BY r.key",
        (entity, json.dumps([list(r) for r in ranges])),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]
