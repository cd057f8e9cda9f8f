"""The queue's part of `pps check`, and the shape every layer's part reports in.

A `Problem` is one kind of inconsistency in one entity: how many, a few examples, the
command that repairs it, and whether `pps check --repair` does. `Findings` gathers one
entity's counts and problems as each layer's check walks it (the store is the lowest
layer, so every layer's `check` module builds on these; engine.consistency composes them).

The queue's own part: jobs counted by state; a job whose events, episode or file are gone
(the layers that own those say which: they know their jobs' payloads) is an orphan the
repair drops; a dead job is put back by the repair when it only embeds, and otherwise left
to `pps queue retry --dead` (a graph job spends LLM calls).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from engine.store import queue
from engine.store.db import Database

EXAMPLES = 10
STUCK = ("pending", "retry", "waiting", "dead")  # jobs that may be dropped (not running)


class Problem(BaseModel):
    """One kind of inconsistency in one entity, with how many and a few examples."""

    layer: str = Field(description="files, turns, vectors, queue, graph or summaries.")
    kind: str
    count: int
    examples: list[str] = Field(description=f"Up to {EXAMPLES} of them: paths, ids, uuids.")
    detail: str
    repair: str = Field(description="The command that repairs it.")
    safe: bool = Field(description="`pps check --repair` does it.")


@dataclass
class Findings:
    """What the check found in one entity so far: counts, problems in the order found,
    and the items behind each problem (by kind), which the repairs take."""

    entity: str
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    found: dict[str, list] = field(default_factory=dict)

    @property
    def fix(self) -> str:
        return f"pps check --repair --entity {self.entity}"

    def problem(
        self,
        layer: str,
        kind: str,
        items: list,
        detail: str,
        repair: str,
        safe: bool,
        shown: Callable[[object], str] = str,
    ) -> None:
        """Record a problem of `kind` when there are `items` (nothing when none)."""
        if not items:
            return
        self.found[kind] = items
        self.problems.append(
            Problem(
                layer=layer,
                kind=kind,
                count=len(items),
                examples=[shown(i) for i in items[:EXAMPLES]],
                detail=detail,
                repair=repair,
                safe=safe,
            )
        )


def jobs_of(
    db: Database, entity: str, kind: str, states: Collection[str]
) -> list[tuple[int, str, dict]]:
    """The entity's jobs of `kind` in these states, by id: (id, key, payload)."""
    rows = db.conn.execute(
        "SELECT id, key, payload FROM jobs WHERE entity = ? AND kind = ?"
        " AND state IN (SELECT value FROM json_each(?)) ORDER BY id",
        (entity, kind, json.dumps(list(states))),
    ).fetchall()
    return [(r[0], r[1], json.loads(r[2])) for r in rows]


def jobs(
    findings: Findings, db: Database, orphans: Iterable[int], retried: Collection[str]
) -> None:
    """Count the entity's jobs by state and report the orphans (job ids the layers found
    pointing at nothing) and the dead jobs: those of a kind in `retried` the repair puts
    back, the others only a person should."""
    entity = findings.entity
    for state, n in db.conn.execute(
        "SELECT state, COUNT(*) FROM jobs WHERE entity = ? GROUP BY state", (entity,)
    ):
        findings.counts[f"jobs_{state}"] = n
    for state in queue.STATES:
        findings.counts.setdefault(f"jobs_{state}", 0)
    orphans = sorted(orphans)
    dropped = set(orphans)
    dead = db.conn.execute(
        "SELECT id, kind FROM jobs WHERE entity = ? AND state = 'dead' ORDER BY id", (entity,)
    ).fetchall()
    dead = [r for r in dead if r[0] not in dropped]  # dropped, not retried
    findings.problem(
        "queue",
        "orphan_job",
        orphans,
        "a job whose events, episode or file are gone: it can only fail or do nothing",
        findings.fix,
        True,
        lambda i: f"job {i}",
    )
    findings.problem(
        "queue",
        "dead_embedding_job",
        [r[0] for r in dead if r[1] in retried],
        "an embedding job that gave up (see `pps queue` for its last error)",
        findings.fix,
        True,
        lambda i: f"job {i}",
    )
    findings.problem(
        "queue",
        "dead_job",
        [f"job {r[0]} ({r[1]})" for r in dead if r[1] not in retried],
        "a job that gave up (see `pps queue` for its last error); retrying a graph job"
        " spends LLM calls",
        f"pps queue retry --dead --entity {entity}",
        False,
    )


def repair(db: Database, entity: str, found: dict[str, list]) -> list[str]:
    """Drop the orphan jobs (those not running meanwhile) and put the dead embedding jobs
    back; say what was done."""
    done: list[str] = []
    if found.get("orphan_job"):
        with db.write() as conn:
            dropped = conn.execute(
                "DELETE FROM jobs WHERE entity = ? AND state IN (SELECT value FROM json_each(?))"
                " AND id IN (SELECT value FROM json_each(?))",
                (entity, json.dumps(STUCK), json.dumps(found["orphan_job"])),
            ).rowcount
        done.append(f"dropped {dropped} jobs pointing at nothing")
    for job_id in found.get("dead_embedding_job", []):
        queue.retry_job(db, entity, job_id)
        done.append(f"put dead embedding job {job_id} back")
    return done
