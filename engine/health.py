"""The status of each component, for GET /health, `pps_health` and `pps doctor`.

No data and no entity names: only whether each part works, and why not. The database
is the one part pps cannot work without: down, pps is down; full (writes fail for lack
of space, reads still answer), pps is degraded, as it is by any other part that does not
work (the graph, the LLM, the model, a worker that is down or whose writes fail). A part
switched off by the settings ("disabled", "unconfigured": no LLM, graph jobs wait) does
not: the component says why. A part still loading after a start (a model, the graph) is
`starting`, and so is pps while one is and nothing else is wrong.
"""

from __future__ import annotations

from engine.backup import records as backups
from engine.capture import entities
from engine.crystal import summarize
from engine.graph import backend as graph
from engine.graph import backlog, reembed
from engine.runtime import Runtime
from engine.search import embeddings, rerank
from engine.search.check import vector_backlog

_HARMLESS = ("ok", "disabled", "unconfigured", "none")
"""Statuses that degrade nothing: `none` is the backup component's "no backup yet"."""


def report(runtime: Runtime) -> dict:
    components = {"database": _database(runtime)}
    components["graph"] = _graph(runtime)
    components["llm"] = graph.llm_health(runtime.graph, runtime.settings, runtime.db)
    components["embeddings"] = _embeddings(runtime)  # down: search uses BM25
    components["reranker"] = rerank.status(runtime.settings)  # down: search ranks without it
    components["workers"] = runtime.workers.health()
    components["files"] = _files(runtime)  # files in the homes that are not indexed
    components["backup"] = _backup(runtime)  # never degrades: `none` says there is none
    components["summaries"] = summarize.status(runtime.db, runtime.settings)  # nor this
    statuses = {c["status"] for c in components.values()}
    if components["database"]["status"] == "down":
        overall = "down"
    elif statuses <= {*_HARMLESS, "starting"}:
        loading = "starting" in statuses or not runtime.loaded()  # or about to begin
        overall = "starting" if loading else "ok"
    else:
        overall = "degraded"
    return {"status": overall, "components": components}


def _database(runtime: Runtime) -> dict:
    try:
        state = {"status": "ok", "schema_version": runtime.db.schema_version()}
    except Exception as exc:  # the database being unreachable is what we report
        return {"status": "down", "error": type(exc).__name__}
    state["dropped_writes"] = runtime.db.dropped_writes()  # by reads, for lack of space
    full = runtime.db.out_of_space()
    if full is not None:
        state.update(status="full", error=full.error, since=full.since)
    return state


def _graph(runtime: Runtime) -> dict:
    """The graph's state, with when its waiting episodes should be through and, while
    a model change's vectors are made again, how many are: over every entity, no names."""
    state = graph.graph_health(runtime.graph)
    waiting = backlog.estimate(runtime.db, runtime.settings)
    if waiting.jobs and waiting.clears_in_s is not None:  # None: no pace yet, or held
        state["clears_in_s"] = round(waiting.clears_in_s)
    moving = [
        found
        for entity in entities.list_all(runtime.db)
        if (found := reembed.reembedding(runtime.db, entity.name)) is not None
    ]
    if moving:
        state["vectors"] = {"made": sum(m[1] for m in moving), "of": sum(m[2] for m in moving)}
    return state


def _embeddings(runtime: Runtime) -> dict:
    """The model's state, and while chunks wait for its vectors (a model change, a burst
    of turns), how many of them have one: counts over every entity, no names."""
    state = embeddings.status(runtime.settings)
    backlog = vector_backlog(runtime.db, runtime.settings.embedding_model)
    if backlog:
        state["vectors"] = {
            "made": sum(b.done for b in backlog),
            "of": sum(b.total for b in backlog),
        }
    return state


def _files(runtime: Runtime) -> dict:
    skipped = len(runtime.index.skipped())
    state = {"status": "ok", "skipped": skipped}
    if skipped:
        state["why"] = (
            "files in the homes are not indexed (a name that is not UTF-8, too big, not"
            " text); each entity's GET /v1/search/index and its memory page list its own"
        )
    return state


def _backup(runtime: Runtime) -> dict:
    try:
        return backups.status(runtime.db)
    except Exception as exc:  # a database without the table is the database's to report
        return {"status": "none", "error": type(exc).__name__}
