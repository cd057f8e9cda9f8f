"""The consistency check (`pps check`, `GET /v1/check`, the `validate_retrieval_chain`
tool): every layer of one entity (or all) walked against its source, with counts, each
problem named with the command that repairs it, and the safe repairs done on request.

Each layer checks its own tables, beside the SQL it mirrors: `engine.search.check` (files,
search rows, vectors, embedding jobs), `engine.capture.check` (events), `engine.store.check`
(the queue; and `Problem`, `Findings`, the shape every part reports in), `engine.graph.check`
(episodes, windows, the graph) and `engine.crystal.check` (summaries). This module only
composes them: the order of the report, the repairs in turn, the rounds.

What is checked, per entity:
- files: each indexed file is still in the home and has the sha256 it was indexed with;
  each file of the home that should be indexed is (or is listed as skipped, and why:
  too big, a name that is not UTF-8, bytes that are not text);
- turns: each stored turn (an event that is not a marker) has its search row, and a
  vector of the current model or an unfinished `embed_events` job naming it; file chunks
  have vectors or an unfinished `embed_files` job; no search row or vector points at an
  event, file or chunk that is gone (or at a marker);
- the queue: no unfinished or dead job points at nothing (an embedding job whose events
  or file are gone, a graph job whose episode is not recorded); dead jobs are counted;
- the graph: each recorded episode's events exist, no event waits for a window that is
  gone; with a graph configured and up, each episode in it is recorded and each fact
  traces to events (through its episodes); a graph that is down is said and skipped;
- summaries: each one's range starts and ends at the entity's events, and none of the
  events it counted is gone;
- forgotten events (engine.forgetting): no layer holds one any more (no text in layer 1,
  no search row, no episode, no summary covering it).

Repairs (`repair=True`) are only the safe ones: re-index a file, admit a turn, enqueue
the missing embeddings, drop index rows, pending windows and jobs that point at nothing,
put dead embedding jobs back. Source data (events, the home's files) is never deleted
or changed; what only a person can repair (events gone, an untraced fact, a dead graph
job that spends LLM calls) is reported with the command to run.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, Field, PrivateAttr

from engine import forgetting
from engine.capture import check as capture_check
from engine.crystal import check as crystal_check
from engine.graph import check as graph_check
from engine.search import check as search_check
from engine.search.homes import SkippedFile
from engine.search.index import Index
from engine.store import check as store_check
from engine.store.check import Findings, Problem


class EntityCheck(BaseModel):
    entity: str
    counts: dict[str, int]
    graph: str = Field(
        description="ok, disabled (no graph configured), or unavailable/not checked: why;"
        " facts are checked only when ok."
    )
    problems: list[Problem]
    skipped: list[SkippedFile] = Field(
        description="Files of the home not indexed on purpose, and why (too big, a name"
        " that is not UTF-8, bytes that are not text): reported, not problems."
    )
    repaired: list[str] = Field(description="What `--repair` did, in order.")
    _found: dict[str, list] = PrivateAttr(default_factory=dict)  # for the repair


class CheckReport(BaseModel):
    entities: list[EntityCheck]
    problems: int = Field(description="Problems left, counted by item, in every entity.")
    seconds: float


def run(
    index: Index, graph, entities: list[str], *, repair: bool = False, rounds: int = 3
) -> CheckReport:
    """Check these entities (with `repair`: repair what is safe, then check again, up to
    `rounds` times, since one repair can uncover the next: an admitted turn needs its
    vector). `graph`: the Graph (its `.store`), or None when none is configured."""
    started = time.monotonic()
    checked = []
    for entity in entities:
        result = _walk(index, graph, entity)
        done: list[str] = []
        for _ in range(rounds if repair else 0):
            actions = _repair(index, entity, result._found)
            if not actions:
                break
            done += actions
            result = _walk(index, graph, entity)
        result.repaired = done
        checked.append(result)
    return CheckReport(
        entities=checked,
        problems=sum(p.count for e in checked for p in e.problems),
        seconds=round(time.monotonic() - started, 3),
    )


def _walk(index: Index, graph, entity: str) -> EntityCheck:
    """Each layer's part, in the order the report lists them."""
    db, found = index.db, Findings(entity)
    skipped = search_check.files(found, index)
    capture_check.events(found, db)
    search_check.rows(found, index)
    search_check.vectors(found, index)
    orphans = search_check.orphan_jobs(db, entity) + graph_check.orphan_jobs(db, entity)
    store_check.jobs(found, db, orphans, search_check.EMBED_KINDS)
    graph_check.episodes(found, db)
    status = graph_check.graph(found, db, graph)
    crystal_check.summaries(found, db)
    forgetting.check(found, db)
    result = EntityCheck(
        entity=entity,
        counts=found.counts,
        graph=status,
        problems=found.problems,
        skipped=skipped,
        repaired=[],
    )
    result._found = found.found
    return result


def _repair(index: Index, entity: str, found: dict[str, list]) -> list[str]:
    """Do the safe repairs of what a walk found, each layer its own; say what was done."""
    return [
        *search_check.repair_index(index, entity, found),
        *graph_check.repair(index.db, entity, found),
        *store_check.repair(index.db, entity, found),
        *search_check.repair_embeddings(index, entity, found),
    ]
