"""The graph's part of `pps check`: the episodes recorded against the events they cover,
the episode windows against the events waiting in them, the `graph_episode` jobs against
their episodes, and, with a graph configured and up, the graph itself: each episode in it
recorded, each fact traced to events through its episodes (a graph that is down is said,
and skipped).

Repair: only the window entries of events that are gone are dropped. An episode whose
events are gone, an episode or a fact the log cannot account for, need a person (a backup
restored, `pps replay graph --fresh`).
"""

from __future__ import annotations

import json
from collections import Counter

from engine.capture import check as capture_check
from engine.graph import episodes as episode_windows
from engine.store import check as store_check
from engine.store.check import Findings
from engine.store.db import Database


def orphan_jobs(db: Database, entity: str) -> list[int]:
    """The entity's graph jobs (not running) whose episode is not recorded."""
    jobs = store_check.jobs_of(db, entity, episode_windows.JOB_KIND, store_check.STUCK)
    recorded = _recorded(db, entity)
    return [job_id for job_id, _, payload in jobs if payload.get("episode") not in recorded]


def episodes(findings: Findings, db: Database) -> None:
    """Check each recorded episode's events, and each window entry's event."""
    entity = findings.entity
    findings.counts["episodes"] = db.conn.execute(
        "SELECT COUNT(*) FROM episodes WHERE entity = ?", (entity,)
    ).fetchone()[0]
    covered = _covered(db, entity)
    findings.counts["episode_events"] = len(covered)
    lost = capture_check.gone(db, (event_id for _, event_id in covered), entity)
    broken = Counter(uuid for uuid, event_id in covered if event_id in lost)
    waiting = [
        r[0]
        for r in db.conn.execute(
            "SELECT event_id FROM graph_pending WHERE entity = ? ORDER BY event_id", (entity,)
        )
    ]
    left = capture_check.gone(db, waiting)
    findings.problem(
        "graph",
        "episode_events_gone",
        [f"{uuid} ({n} events gone)" for uuid, n in sorted(broken.items())],
        "an episode whose events are gone from the log: the graph keeps what it learned"
        " from them, and a replay cannot rebuild it",
        "none here: the events are source data; restore them from a backup (pps restore)",
        False,
    )
    findings.problem(
        "graph",
        "pending_event_gone",
        [i for i in waiting if i in left],
        "an event gone from the log still waits for its episode window",
        findings.fix,
        True,
        lambda i: f"event {i}",
    )


def graph(findings: Findings, db: Database, graph) -> str:
    """Check the graph against the episodes recorded; returns its status: ok, disabled
    (`graph` None: none configured), or unavailable and why (facts not checked).
    `graph`: something with `.store` (the Graph), its `.why` while that is None."""
    if graph is None:
        return "disabled"
    store = getattr(graph, "store", None)
    if store is None:
        why = getattr(graph, "why", "the graph is starting")
        return f"unavailable: {why}; facts not checked"
    entity = findings.entity
    try:
        in_graph = store.episode_uuids(entity)
        facts = store.fact_sources(entity)
    except Exception as exc:  # a graph that is down is reported, and skipped
        return f"unavailable: {exc}; facts not checked"
    recorded = _recorded(db, entity)
    covered = _covered(db, entity)
    missing = capture_check.gone(db, (event_id for _, event_id in covered))
    traced = {uuid for uuid, event_id in covered if event_id not in missing}
    findings.counts["graph_episodes"] = len(in_graph)
    findings.counts["facts"] = len(facts)
    replay = f"pps replay graph --entity {entity} --fresh (with the server stopped)"
    findings.problem(
        "graph",
        "graph_episode_unrecorded",
        sorted(set(in_graph) - recorded),
        "an episode in the graph that the log does not record",
        replay,
        False,
    )
    findings.problem(
        "graph",
        "fact_untraced",
        sorted(u for u, eps in facts.items() if not set(eps) & traced),
        "a fact that traces to no event (none of its episodes has events in the log)",
        replay,
        False,
    )
    return "ok"


def repair(db: Database, entity: str, found: dict[str, list]) -> list[str]:
    """Drop the window entries of events that are gone; say what was done."""
    gone = found.get("pending_event_gone")
    if not gone:
        return []
    with db.write() as conn:
        conn.execute(
            "DELETE FROM graph_pending WHERE entity = ?"
            " AND event_id IN (SELECT value FROM json_each(?))",
            (entity, json.dumps(gone)),
        )
    return [f"dropped {len(gone)} episode-window entries of gone events"]


def _recorded(db: Database, entity: str) -> set[str]:
    rows = db.conn.execute("SELECT uuid FROM episodes WHERE entity = ?", (entity,))
    return {r[0] for r in rows}


def _covered(db: Database, entity: str) -> list[tuple[str, int]]:
    """(episode uuid, event id) of each event the entity's recorded episodes cover."""
    return [
        (r[0], r[1])
        for r in db.conn.execute(
            "SELECT ee.episode_uuid, ee.event_id FROM episode_events ee JOIN episodes ep"
            " ON ep.uuid = ee.episode_uuid WHERE ep.entity = ?",
            (entity,),
        )
    ]
