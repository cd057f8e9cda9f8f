"""The summaries' part of `pps check`: each summary's range starts and ends at the entity's
events, and none of the events it counted is gone. Nothing here is repaired: the events
are source data, restored from a backup (`pps restore`).
"""

from __future__ import annotations

import json

from engine.capture import check as capture_check
from engine.store.check import Findings
from engine.store.db import Database


def summaries(findings: Findings, db: Database) -> None:
    entity = findings.entity
    rows = db.conn.execute(
        "SELECT id, start_id, end_id, event_count, channels FROM summaries"
        " WHERE entity = ? ORDER BY id",
        (entity,),
    ).fetchall()
    findings.counts["summaries"] = len(rows)
    ranges = [
        (r["start_id"], r["end_id"], None if r["channels"] is None else json.loads(r["channels"]))
        for r in rows
    ]
    now = capture_check.in_ranges(db, entity, ranges)
    broken = [
        f"summary {r['id']} ({r['start_id']}..{r['end_id']}:"
        f" {r['event_count'] - held} of {r['event_count']} events gone)"
        for r, (ends, held) in zip(rows, now, strict=True)
        if ends < (1 if r["start_id"] == r["end_id"] else 2) or held < r["event_count"]
    ]
    findings.problem(
        "summaries",
        "summary_events_gone",
        broken,
        "a summary whose range starts or ends at an event that is gone, or covers events"
        " that are gone",
        "none here: the events are source data; restore them from a backup (pps restore)",
        False,
    )
