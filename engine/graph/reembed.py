"""The knowledge graph's vectors follow the embedding model.

Graphiti stores a vector on every entity name and every fact, made with the engine's
model (engine.graph.embedder). Both bundled models have 384 dimensions, so after a change
of EMBEDDING_MODEL nothing would fail: a new model's query would be compared with the old
model's vectors, and find nothing by its meaning, silently. So each entity's graph has a
record of its vectors' model (`graph_vectors`, migration 0111), and where the configured
model is another, the graph is re-embedded in the background:

- `settle` (at start, by the graph's preparer; or when a search or an episode needs it
  first) records the model; a graph from before the record (an upgraded data dir) has
  a sample of its vectors compared with the configured model's (`vectors.agree`). Where
  they differ, it sets the record's `target` and queues a `graph_reembed` job.
- The job (`handler`) reads the graph a page at a time with Graphiti's models, embeds the
  names and facts not yet of the target model with Graphiti's functions, and writes each
  vector with a mark naming its model in the same query (engine.graph.vectors), so a
  job stopped anywhere (a crash, a restart) resumes with nothing done twice and nothing
  left out: what is done is written in the graph itself. After `SLICE` vectors the job
  queues the next one at the back of the queue, so entities take turns; failures retry
  with backoff, and a job that keeps failing is dead with its error (`pps queue`). Once
  every vector is the target's, the record says so.
- Meanwhile the entity's fact search (texture search, recall's graph layer) answers by
  words alone (`"fallback": "bm25"`), and its extraction waits: a `graph_episode` job
  pauses its queue (`PAUSED`), lifted when the re-embedding ends. Why wait rather than
  extract meanwhile: Graphiti's extraction looks for duplicates of the names and facts it
  finds by their vectors, and while the graph holds vectors of two models it would miss
  them (a duplicate node, a fact not invalidated); re-embedding costs no LLM (15,000
  vectors in 100 s on two busy cores, FalkorDB, to bge), and no episode is lost by
  waiting. `reembedding` says how far it is.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from engine.graph import episodes
from engine.kernel import timestamps
from engine.search import embeddings
from engine.store import queue
from engine.store.db import Database

log = logging.getLogger("pps.graph.reembed")

JOB_KIND = "graph_reembed"
KINDS = ("nodes", "facts")
"""What is made again, in this order (engine.graph.vectors): entity names, then facts."""
PAUSED = "the graph's vectors are being made again"
"""How the reason of an extraction paused for a re-embedding begins."""
PAGE = 128
"""Nodes or facts read at once (and written at once)."""
SLICE = 512
"""Vectors one job makes before the next job, at the back of the queue, goes on."""
SAMPLE = 16
"""Nodes and facts whose vectors are compared with the model's, where no record says."""
_settling = threading.Lock()  # one settle at a time: two would start two re-embeddings


@dataclass
class Record:
    model: str | None
    target: str | None
    done: int
    total: int
    since: str | None


def record(db: Database, entity: str) -> Record | None:
    row = db.conn.execute(
        "SELECT model, target, done, total, since FROM graph_vectors WHERE entity = ?",
        (entity,),
    ).fetchone()
    return None if row is None else Record(**dict(row))


def reembedding(db: Database, entity: str) -> tuple[str, int, int] | None:
    """How far the re-embedding of the entity's graph is: (the model, vectors made with it,
    vectors in the graph); None when none is under way."""
    found = record(db, entity)
    if found is None or found.target is None:
        return None
    return found.target, found.done, found.total


def current(graph, db: Database, entity: str) -> bool:
    """Whether every vector of the entity's graph is the configured model's: its fact
    search may rank by them, its extraction compare with them. Settled first where
    nothing is recorded (reads the graph; raises where it cannot)."""
    found = record(db, entity) or settle(graph, db, entity)
    return found.target is None and found.model == graph.settings.embedding_model


def settle(graph, db: Database, entity: str) -> Record:
    """Record the model of the entity's graph vectors, and where it is not the configured
    one, start re-embedding them (a `graph_reembed` job). A re-embedding under way for the
    configured model goes on (its job queued again where none is left: a dead one stays
    dead, for `pps queue` to show)."""
    with _settling:
        return _settle(graph, db, entity)


def _settle(graph, db: Database, entity: str) -> Record:
    model = graph.settings.embedding_model
    found = record(db, entity)
    if found is None:
        agree = graph.store.vectors_agree(entity, SAMPLE)
        if agree is not False:  # the model's, or no vector yet
            _insert(db, entity, model)
            return record(db, entity) or _missing(entity)
        base = None
    elif found.target is None and found.model == model:
        return found
    elif found.target == model:
        with db.write() as conn:
            if not any(queue.counts(conn, JOB_KIND, entity, states=queue.UNFINISHED).values()):
                key = f"{model}@{found.since}/restart@{timestamps.now()}"
                queue.enqueue(conn, entity, JOB_KIND, key, {"model": model})
        return found
    else:
        base = found.model
    made, total = graph.store.vector_counts(entity, model, base)
    since = timestamps.now()
    with db.write() as conn:
        conn.execute(
            "INSERT INTO graph_vectors (entity, model, target, done, total, since, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (entity) DO UPDATE SET"
            " model = excluded.model, target = excluded.target, done = excluded.done,"
            " total = excluded.total, since = excluded.since, updated_at = excluded.updated_at",
            (entity, base, model, made, total, since, since),
        )
        queue.enqueue(conn, entity, JOB_KIND, f"{model}@{since}", {"model": model})
    log.info(
        "the graph of %s holds vectors of %s: making them again with %s (%d of %d are)",
        entity,
        base or "another model",
        model,
        made,
        total,
    )
    return record(db, entity) or _missing(entity)


def cleared(db: Database, entity: str, model: str) -> None:
    """The entity's graph was emptied: whatever it holds next is `model`'s."""
    with db.write() as conn:
        conn.execute("DELETE FROM graph_vectors WHERE entity = ?", (entity,))
    _insert(db, entity, model)
    lift(db, entity)


def paused_reason(db: Database, entity: str) -> str:
    """Why an episode of the entity waits (the reason its paused queue gives)."""
    found = record(db, entity)
    model = found.target if found is not None and found.target else "the configured model"
    return f"{PAUSED} with {model}; extraction goes on once they are (pps queue)"


def lift(db: Database, entity: str) -> bool:
    """Lift the pause of the entity's extraction for a re-embedding, once none is under
    way; whether there was one to lift."""
    found = record(db, entity)
    if found is None or found.target is not None:
        return False
    paused = [
        p
        for p in queue.status(db, entity, dead_limit=0).paused
        if p.kind == episodes.JOB_KIND and p.reason.startswith(PAUSED)
    ]
    if paused:
        queue.retry(db, entity)
    return bool(paused)


def handler(graph, db: Database, settings, slice_size: int = SLICE, page_size: int = PAGE):
    """The `graph_reembed` job: make about `slice_size` more vectors of the entity's graph
    again with the model it names, a page at a time (names, then facts), then queue the
    next job; at the end, record the model and let extraction go on. Returns the vectors
    it made (the queue ignores it; tests read it)."""

    def handle(job: queue.Job) -> int:
        entity, model = job.entity, job.payload["model"]
        found = record(db, entity)
        if found is None or found.target != model or settings.embedding_model != model:
            return 0  # another model was asked for since: its own job does the work
        try:
            embeddings.get(settings)
        except embeddings.Unavailable as exc:  # waits for the model, as embed_files
            raise queue.Pause(str(exc)) from exc
        made, total = graph.store.vector_counts(entity, model, found.model)
        _progress(db, entity, made, total)
        kinds, embedded, seen = list(KINDS), 0, set[str]()
        while kinds and embedded < slice_size:
            page = graph.store.reembed_page(entity, kinds[0], model, found.model, page_size)
            if seen & set(page.uuids):  # written, yet not marked: never loop on it
                raise RuntimeError(
                    f"{kinds[0]} of {entity}'s graph still read as not {model}'s once"
                    f" written: {sorted(seen & set(page.uuids))[:3]}"
                )
            seen |= set(page.uuids)
            embedded += page.embedded
            made = min(made + len(page.uuids), total)
            if len(page.uuids) < page_size:  # none of this kind left
                kinds.pop(0)
            _progress(db, entity, made, total)
        if not kinds:
            return _finish(graph, db, entity, found, embedded)
        with db.write() as conn:  # the rest: a job at the back of the queue
            key = f"{model}@{found.since}/after-{job.id}"
            queue.enqueue(conn, entity, JOB_KIND, key, {"model": model})
        return embedded

    return handle


def _finish(graph, db: Database, entity: str, found: Record, embedded: int) -> int:
    """Every item read: record the model once the graph says every vector is its."""
    model = found.target
    assert model is not None  # the handler checked
    made, total = graph.store.vector_counts(entity, model, found.model)
    if made < total:  # something came in behind the pages: the job is tried again
        _progress(db, entity, made, total)
        raise RuntimeError(
            f"{total - made} of {total} vectors of the graph are not yet {model}'s after"
            " reading every page; reading them again"
        )
    now = timestamps.now()
    with db.write() as conn:
        conn.execute(
            "UPDATE graph_vectors SET model = ?, target = NULL, done = ?, total = ?,"
            " updated_at = ? WHERE entity = ? AND target = ?",
            (model, made, total, now, entity, model),
        )
    lift(db, entity)
    log.info("the graph of %s holds %s's vectors only (%d)", entity, model, total)
    return embedded


def _progress(db: Database, entity: str, done: int, total: int) -> None:
    with db.write() as conn:
        conn.execute(
            "UPDATE graph_vectors SET done = ?, total = ?, updated_at = ? WHERE entity = ?",
            (done, total, timestamps.now(), entity),
        )


def _insert(db: Database, entity: str, model: str) -> None:
    with db.write() as conn:
        conn.execute(
            "INSERT INTO graph_vectors (entity, model, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (entity) DO NOTHING",
            (entity, model, timestamps.now()),
        )


def _missing(entity: str) -> Record:
    raise LookupError(f"no graph_vectors row for {entity} after writing it")
