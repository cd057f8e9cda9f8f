"""Layer 3 services, rich texture: texture_search, texture_explore, texture_timeline,
texture_add, texture_add_triplet, texture_delete and ingestion stats; the handler of
`graph_episode` jobs; and replay of the log into the graph.

Every fact returned carries the uids of the events it came from (fact -> episodes ->
events, the links recorded by engine.graph.episodes). Adding goes through layer 1: a note or
a triplet is stored as an event on the `texture` channel, so it is acknowledged only
once committed, reaches the graph through the same queue, and comes back on a replay.
A graph that is off or down never fails a read: the answer says so in `status`.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_serializer

from engine.capture.events import Capture
from engine.graph import episodes, reembed
from engine.graph.facts import DELETABLE, Fact, Node
from engine.kernel.config import Settings
from engine.kernel.errors import Conflict, NotFound, Unavailable
from engine.kernel.events import EventIn
from engine.kernel.lock import SERVE, DataDirBusy, DataDirLock
from engine.kernel.requests import NON_BLANK, Request, is_blank
from engine.kernel.timestamps import Moment, MomentText
from engine.llm import budget, endpoint
from engine.store import queue
from engine.store.db import Database
from engine.store.queue import QueueStatus

log = logging.getLogger("pps.texture")

# --- what callers send ---


class SearchQuery(Request):
    query: str = Field(min_length=1, max_length=4096, description="What to find facts about.")
    limit: int = Field(10, ge=1, le=100)
    since: Moment | None = Field(None, description="Facts true (or learned) at or after this.")
    until: Moment | None = Field(None, description="Facts true (or learned) at or before this.")


class ExploreQuery(Request):
    entity_name: str = Field(min_length=1, max_length=256, description="A person, place, thing.")
    depth: int = Field(1, ge=1, le=3, description="How many hops of relationships.")
    limit: int = Field(50, ge=1, le=500, description="Most facts returned.")


class TimelineQuery(Request):
    since: MomentText | None = None
    until: MomentText | None = None
    limit: int = Field(20, ge=1, le=200, description="Most episodes, newest first.")


class FactsQuery(Request):
    contains: str | None = Field(
        None, min_length=1, max_length=200, description="In the fact or an end's name."
    )
    state: Literal["valid", "invalidated"] | None = Field(
        None, description="valid: not invalidated; invalidated: stopped being true."
    )
    limit: int = Field(100, ge=1, le=2000)
    offset: int = Field(0, ge=0, le=1_000_000)


class NoteIn(Request):
    content: str = Field(
        min_length=1,
        max_length=65_536,
        description="Text to learn from.",
        json_schema_extra=NON_BLANK,
    )
    created_at: Moment | None = Field(None, description="When it was true; default: now.")

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if is_blank(value):
            raise ValueError("content must not be empty")
        return value


class TripletIn(Request):
    source: str = Field(
        min_length=1,
        max_length=256,
        description="Entity the fact is about.",
        json_schema_extra=NON_BLANK,
    )
    relationship: str = Field(
        min_length=1, max_length=64, pattern=r"^[A-Za-z][A-Za-z0-9_ ]*$", description="WORKS_AT"
    )
    target: str = Field(min_length=1, max_length=256, json_schema_extra=NON_BLANK)
    fact: str = Field(
        min_length=1,
        max_length=4096,
        description="The fact in a sentence.",
        json_schema_extra=NON_BLANK,
    )
    created_at: Moment | None = Field(None, description="When it became true; default: now.")

    @field_validator("source", "target", "fact")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if is_blank(value):
            raise ValueError("must not be empty")
        return value.strip()


# --- what callers get ---


class FactOut(Fact):
    """A fact as callers get it: traced to the events it came from."""

    event_uids: list[str] = Field(description="The events (layer 1) the fact came from.")


class SearchResult(BaseModel):
    facts: list[FactOut]
    status: str = Field(description="ok, disabled (no graph configured) or unavailable: why.")
    fallback: Literal["bm25"] | None = Field(
        None,
        description="bm25: ranked by words alone, while the graph's vectors are made again"
        " with the configured embedding model; absent otherwise.",
    )

    @model_serializer(mode="wrap")
    def _fallback_when_there_is_one(self, handler):
        return {k: v for k, v in handler(self).items() if k != "fallback" or v is not None}


class Exploration(BaseModel):
    center: Node | None
    nodes: list[Node]
    facts: list[FactOut]
    status: str


class EpisodeOut(BaseModel):
    uuid: str
    kind: str
    session_key: str
    started_at: str
    ended_at: str
    turns: int
    ingested_at: str | None
    event_uids: list[str]
    facts: list[FactOut]


class Timeline(BaseModel):
    episodes: list[EpisodeOut]
    status: str


class Facts(BaseModel):
    facts: list[FactOut]
    status: str


class Accepted(BaseModel):
    event_uid: str
    episode_uuid: str
    status: str = Field(description="queued: it reaches the graph through the queue.")


class Deleted(BaseModel):
    uuid: str
    deleted: str = Field(description="fact, entity or episode")


class Stats(BaseModel):
    status: str
    backend: str
    episodes: dict[str, int]
    jobs: dict[str, int]
    graph: dict[str, int] | None
    usage_today: dict[str, int]
    paused: str | None
    queue: QueueStatus = Field(description="Every job of the entity: embedding and graph.")


# --- reading ---


def search(
    graph, db: Database, entity: str, query: SearchQuery, *, vector: list[float] | None = None
) -> SearchResult:
    """`vector`: the query embedded already (engine.search.embeddings), not embedded again.
    While the graph's vectors are being made again with the configured model
    (engine.graph.reembed), by words alone, and the answer says so (`fallback`)."""
    status = _status(graph)
    if status != "ok":
        return SearchResult(facts=[], status=status)
    try:
        by_meaning = reembed.current(graph, db, entity)
        facts = graph.store.search(
            entity,
            query.query,
            query.limit,
            query.since,
            query.until,
            vector if by_meaning else None,
            by_meaning=by_meaning,
        )
    except Exception as exc:
        return SearchResult(facts=[], status=_unavailable(graph, exc))
    fallback = None if by_meaning else "bm25"
    return SearchResult(facts=_with_events(db, entity, facts), status="ok", fallback=fallback)


def waiting(graph, db: Database, settings: Settings, entity: str) -> str | None:
    """Why the entity's graph waits instead of growing: the pause of its graph jobs (no
    extraction LLM, a key refused, the day's budget spent), or no extraction LLM
    configured at all; None when nothing holds it (or no graph is configured)."""
    from engine.graph.backend import waiting as jobs_waiting

    if graph is None:
        return None
    why = jobs_waiting(db, entity).get("waiting_for")
    if why is None and settings.llm_provider == "none":
        why = endpoint.NOT_CONFIGURED
    return why


def facts(graph, db: Database, entity: str, query: FactsQuery) -> Facts:
    """The entity's facts, valid and invalidated, newest first, each traced to its events."""
    status = _status(graph)
    if status != "ok":
        return Facts(facts=[], status=status)
    try:
        found = graph.store.list_facts(
            entity, query.limit, query.offset, query.contains, query.state
        )
    except Exception as exc:
        return Facts(facts=[], status=_unavailable(graph, exc))
    return Facts(facts=_with_events(db, entity, found), status="ok")


def explore(graph, db: Database, entity: str, query: ExploreQuery) -> Exploration:
    status = _status(graph)
    if status != "ok":
        return Exploration(center=None, nodes=[], facts=[], status=status)
    try:
        found = graph.store.explore(entity, query.entity_name, query.depth, query.limit)
    except Exception as exc:
        return Exploration(center=None, nodes=[], facts=[], status=_unavailable(graph, exc))
    if found.center is None:
        raise NotFound(f"no entity named {query.entity_name!r} in the graph", "entity_name")
    return Exploration(
        center=found.center,
        nodes=found.nodes,
        facts=_with_events(db, entity, found.facts),
        status="ok",
    )


def timeline(graph, db: Database, entity: str, query: TimelineQuery) -> Timeline:
    """Episodes newest first (from the log, so it works with the graph down), each with
    the facts the graph holds from it."""
    where, params = ["entity = ?"], [entity]
    if query.since is not None:
        where.append("ended_at >= ?")
        params.append(query.since)
    if query.until is not None:
        where.append("started_at <= ?")
        params.append(query.until)
    where.append("deleted_at IS NULL")
    rows = db.conn.execute(
        f"SELECT * FROM episodes WHERE {' AND '.join(where)}"
        " ORDER BY started_at DESC, uuid LIMIT ?",
        [*params, query.limit],
    ).fetchall()
    uuids = [r["uuid"] for r in rows]
    sources = episodes.trace(db, entity, uuids)
    status = _status(graph)
    facts: dict[str, list] = {}
    if status == "ok":
        try:
            facts = graph.store.episode_facts(entity, uuids)
        except Exception as exc:
            status = _unavailable(graph, exc)
    return Timeline(
        episodes=[
            EpisodeOut(
                uuid=r["uuid"],
                kind=r["kind"],
                session_key=r["session_key"],
                started_at=r["started_at"],
                ended_at=r["ended_at"],
                turns=r["turns"],
                ingested_at=r["ingested_at"],
                event_uids=sources.get(r["uuid"], []),
                facts=_with_events(db, entity, facts.get(r["uuid"], [])),
            )
            for r in rows
        ],
        status=status,
    )


def stats(graph, db: Database, settings: Settings, entity: str) -> Stats:
    """What has been fed to the graph, what waits, what it cost today, and the entity's
    whole queue (embedding jobs too, dead ones with their errors, pauses with why)."""
    row = db.conn.execute(
        "SELECT COUNT(*) AS closed, COUNT(ingested_at) AS ingested,"
        " COALESCE(SUM(truncated), 0) AS truncated FROM episodes WHERE entity = ?",
        (entity,),
    ).fetchone()
    waiting = db.conn.execute(
        "SELECT COUNT(*) FROM graph_pending WHERE entity = ?", (entity,)
    ).fetchone()[0]
    jobs = queue.counts(db.conn, episodes.JOB_KIND, entity)
    whole = queue.status(db, entity)
    paused = [p.reason for p in whole.paused if p.kind == episodes.JOB_KIND]
    status, counts = _status(graph), None
    if status == "ok":
        try:
            counts = graph.store.counts(entity)
        except Exception as exc:
            status = _unavailable(graph, exc)
    return Stats(
        status=status,
        backend=graph.backend if graph is not None else "none",
        episodes={**dict(row), "turns_waiting": waiting},
        jobs=jobs,
        graph=counts,
        usage_today=budget.usage_today(db, entity),
        paused=paused[0] if paused else None,
        queue=whole,
    )


# --- writing ---


def add(capture: Capture, entity: str, note: NoteIn) -> Accepted:
    """Learn from a piece of text: stored as an event, an episode of its own."""
    event = EventIn(
        channel=episodes.TEXTURE_CHANNEL,
        event_type="note",
        author=entity,
        content=note.content,
        created_at=note.created_at,
    )
    return _accept(capture, entity, event)


def add_triplet(capture: Capture, entity: str, triplet: TripletIn) -> Accepted:
    """Add one fact between two entities as given (Graphiti still dedupes it)."""
    relationship = re.sub(r"\s+", "_", triplet.relationship.strip()).upper()
    event = EventIn(
        channel=episodes.TEXTURE_CHANNEL,
        event_type="triplet",
        author=entity,
        content=triplet.fact,
        metadata={"source": triplet.source, "relationship": relationship, "target": triplet.target},
        created_at=triplet.created_at,
    )
    return _accept(capture, entity, event)


def _accept(capture: Capture, entity: str, event: EventIn) -> Accepted:
    recorded = capture.record(entity, [event])[0]
    uid = episodes.episode_uuid(entity, [recorded.event_uid])
    return Accepted(event_uid=recorded.event_uid, episode_uuid=uid, status="queued")


def delete(
    graph, db: Database, entity: str, uuid: str, kinds: tuple[str, ...] = DELETABLE
) -> Deleted:
    """Delete a fact, an entity node or an episode (of `kinds`) from this entity's graph. The log
    keeps its events. A deleted episode stays out of replays; a deleted fact or entity
    comes back if a replay extracts it again. A graph that is down raises Unavailable
    (503): unlike a read, a delete cannot answer with less."""
    from engine.graph.entity_graphs import GraphUnavailable

    status = _status(graph)
    if status == "disabled":
        raise NotFound("no graph is configured (GRAPH_BACKEND=none)")
    down = "the graph is down; nothing was deleted; retry later"
    if status != "ok":
        raise Unavailable("graph", f"{down} ({status})")
    try:
        kind = graph.store.delete(entity, uuid, kinds)
    except GraphUnavailable as exc:
        raise Unavailable("graph", f"{down} ({_unavailable(graph, exc)})") from exc
    if kind is None:
        what = " or ".join(kinds) if kinds != DELETABLE else "fact, entity or episode"
        raise NotFound(f"no {what} {uuid!r} in this entity's graph", "uuid")
    if kind == "episode":
        episodes.mark_deleted(db, entity, uuid)
    return Deleted(uuid=uuid, deleted=kind)


# --- the queue's handler ---


def handler(graph, db: Database, settings: Settings):
    """The `graph_episode` job: add the recorded episode to the graph, once."""

    def handle(job: queue.Job):
        uuid = job.payload["episode"]
        if _deleted(db, job.entity, uuid):
            return None  # texture_delete removed it after it was queued
        episode = episodes.load(db, uuid, settings.graph_episode_max_chars)
        if episode is None or episode.entity != job.entity:
            raise LookupError(f"episode {uuid} is not recorded for this entity")
        if settings.llm_provider == "none":
            raise queue.Pause(endpoint.NOT_CONFIGURED)
        spent = budget.budget_spent(db, settings, job.entity)
        if spent:
            reason = f"{budget.BUDGET_SPENT} for {job.entity} ({spent}); resumes after 00:00 UTC"
            raise queue.Pause(reason)
        if not reembed.current(graph, db, job.entity):  # see engine.graph.reembed
            raise queue.Pause(reembed.paused_reason(db, job.entity))
        usage = budget.Usage()
        try:
            graph.store.add_episode(episode, usage)
        except Exception as exc:
            from engine.llm import client as llm  # the SDKs, loaded by what talks to the LLM

            graph.note_failure(exc)
            refused = llm.refusal(exc)
            if refused is not None:
                raise queue.Pause(refused) from exc
            raise
        finally:
            budget.spend(db, job.entity, usage)
        graph.note_success()
        if _deleted(db, job.entity, uuid):
            # Withdrawn while it was being added (a forget, an edit): take it out again.
            graph.store.delete(job.entity, uuid, kinds=("episode",))
            return usage
        episodes.mark_ingested(db, uuid, episode.truncated)
        return usage  # the queue ignores it; bench/graph.py reads it

    return handle


def forget_handler(graph, db: Database):
    """The `graph_forget` job: remove a withdrawn episode from the graph, with the facts
    and entities only it supported (Graphiti's `remove_episode`; facts other episodes
    support too stay). An episode the graph does not hold, one recorded again since (the
    same turns made it anew), or no graph configured: done at once. A graph that is down
    fails the job, and the queue tries again."""

    def handle(job: queue.Job) -> None:
        uuid = job.payload["episode"]
        if graph is not None and _deleted(db, job.entity, uuid):
            graph.store.delete(job.entity, uuid, kinds=("episode",))

    return handle


def _deleted(db: Database, entity: str, uuid: str) -> bool:
    row = db.conn.execute(
        "SELECT deleted_at FROM episodes WHERE uuid = ? AND entity = ?", (uuid, entity)
    ).fetchone()
    return row is not None and row[0] is not None


# --- replay ---


class ReplayOutcome(BaseModel):
    total: int
    done: int
    dead: int
    waiting: str | None = Field(None, description="Why jobs wait, if the replay stopped there.")
    ran_here: bool = Field(description="False: a running server's workers did the work.")


def rebuild(
    settings: Settings, db: Database, names: list[str], *, fresh: bool = False, progress=None
) -> ReplayOutcome:
    """`pps replay graph`: replay the log of each entity into the graph and wait for it.

    With a server running on the data dir (it holds the data dir's lock), its workers do
    the work and this only watches. Otherwise this takes the lock, and the graph and the
    workers run here. Either way it returns once the replay is done, or as soon as what
    is left of it waits: the entity's graph queue is paused (no LLM, key refused, budget
    spent), and the reason is returned. Pauses of these entities are lifted first, so
    the reason is today's. Stopping midway loses nothing: the jobs stay queued, and
    running it again resumes the same replay. Another command holding the data dir is
    a Conflict.
    """
    from engine.graph.backend import Graph

    try:
        lock = DataDirLock.acquire(settings.data_dir, "pps replay graph")
    except DataDirBusy as busy:
        if busy.owner.command != SERVE:
            raise Conflict(f"{busy}: wait for it to finish") from None
        if fresh:
            raise Conflict(f"{busy}: stop it before replaying with --fresh") from None
        lock = None  # the server's workers do the work
    here = lock is not None
    graph: Graph | None = None
    workers: queue.Workers | None = None
    try:
        graph = Graph(settings, db).start(sweep=False) if here else None
        if graph is not None:
            assert graph.store is not None  # started
            for name in names if fresh else []:
                graph.store.clear(name)
                reembed.cleared(db, name, settings.embedding_model)
            queue.resume(db)
            for name in names:  # vectors of another model: made again first
                reembed.settle(graph, db, name)
        else:
            for name in names:
                queue.retry(db, name)
        numbers = [episodes.replay(db, episodes.Window.from_settings(settings), n) for n in names]
        if graph is not None:
            workers = queue.Workers(db, queue.Policy.from_settings(settings))
            workers.add(episodes.JOB_KIND, handler(graph, db, settings), settings.graph_concurrency)
            workers.add(reembed.JOB_KIND, reembed.handler(graph, db, settings))
            workers.start()
        while True:
            outcome = _replay_state(db, numbers, here)
            if progress is not None:
                progress(outcome.done + outcome.dead, outcome.total)
            if outcome.waiting or outcome.done + outcome.dead >= outcome.total:
                return outcome
            time.sleep(0.2)
    finally:
        if workers is not None:
            workers.stop()
        if graph is not None:
            graph.stop()
        if lock is not None:
            lock.release()


def _replay_state(db: Database, numbers: list[int], here: bool) -> ReplayOutcome:
    """How far the replays are; `waiting` is set once nothing left of them can move: every
    unfinished job is of an entity whose graph queue is paused, and none is running (a
    paused queue's pending and retrying jobs are not claimed until it is lifted)."""
    states = [episodes.replay_progress(db, n) for n in numbers]
    paused = {  # a re-embedding under way moves: its end lifts its pause
        p.entity: p.reason
        for p in queue.status(db, dead_limit=0).paused
        if p.kind == episodes.JOB_KIND and not p.reason.startswith(reembed.PAUSED)
    }
    total = sum(s["total"] for s in states)
    done, dead = sum(s["done"] for s in states), sum(s["dead"] for s in states)
    stuck, moving = [], False
    for s in states:
        left = s["pending"] + s["retry"] + s["waiting"] + s["running"]
        if not left:
            continue
        if s["entity"] in paused and not s["running"]:
            stuck.append(f"{s['entity']}: {paused[s['entity']]}")
        else:
            moving = True
    waiting = "; ".join(stuck) if stuck and not moving else None
    return ReplayOutcome(total=total, done=done, dead=dead, waiting=waiting, ran_here=here)


# --- plumbing ---


def _status(graph) -> str:
    if graph is None:
        return "disabled"
    if graph.store is None:
        return "unavailable: the graph is starting"
    if graph.unreachable is not None:
        return f"unavailable: the graph server does not answer ({graph.unreachable})"
    if graph.index_error is not None:  # as /health says: failing
        return f"unavailable: the graph's indexes are not made ({graph.index_error})"
    return "ok"


def _unavailable(graph, exc: Exception) -> str:
    log.warning("the graph did not answer: %s", exc)
    graph.read_failed()
    return f"unavailable: {exc}"


def _with_events(db: Database, entity: str, facts) -> list[FactOut]:
    sources = episodes.trace(db, entity, sorted({u for f in facts for u in f.episodes}))
    out = []
    for f in facts:
        uids = list(dict.fromkeys(uid for ep in f.episodes for uid in sources.get(ep, [])))
        out.append(FactOut(**f.model_dump(), event_uids=uids))
    return out
