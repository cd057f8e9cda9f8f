"""One data dir's memory service: the front door every face holds.

The server makes one at start (`Service.start`) over its running engine
(`engine.runtime.Runtime`: the workers, the models, the graph) and stops it at shutdown.
A command that works on the data dir itself opens one (`Service.open`): the same parts,
nothing started in the background.

This module loads the settings, the database and the lock alone; each part and method
loads the engine modules it uses when it is first used, so that a light command (`pps
entity list`) starts as fast as the database opens, without search, the graph or a model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from engine.kernel.config import Settings
from engine.kernel.lock import DataDirBusy, DataDirLock
from engine.store.db import Database

if TYPE_CHECKING:
    from engine.api.backups import Backups
    from engine.api.entities import Entities
    from engine.api.memory import Memory
    from engine.api.parts import Parts
    from engine.api.statuses import Statuses
    from engine.api.stores import Stores
    from engine.capture.clients import Call, ClientRecord, Recorder
    from engine.capture.events import Capture
    from engine.consistency import CheckReport
    from engine.graph.texture import ReplayOutcome
    from engine.runtime import Runtime
    from engine.search.index import Index, SyncReport
    from engine.store.queue import QueueStatus


@dataclass
class Opened:
    """The parts a command opens on a data dir no server need be running on, each made
    when a part first asks for it: the search index, capture with the runtime's
    listeners, and, with `reach` (the command's name), the graph (`reach_graph`). A
    command that lists entities makes none of them; one that fails first, on an entity
    that does not exist say, starts no graph."""

    settings: Settings
    db: Database
    reach: str | None = None
    _index: Index | None = field(init=False, default=None)
    _capture: Capture | None = field(init=False, default=None)
    _graph: Any = field(init=False, default=None)
    _reached: ExitStack | None = field(init=False, default=None)

    @property
    def index(self) -> Index:
        """The search index, made when a part first asks for it."""
        if self._index is None:
            from engine.search.index import Index

            self._index = Index(self.settings, self.db)
        return self._index

    @index.setter
    def index(self, index: Index) -> None:
        """Parts names a settable index, as the server's runtime holds one."""
        self._index = index

    @property
    def capture(self) -> Capture:
        """Capture, with the listeners the server's runtime gives it (engine.runtime)."""
        if self._capture is None:
            from engine.capture.events import Capture
            from engine.runtime import CAPTURE_LISTENERS

            self._capture = Capture(self.db, CAPTURE_LISTENERS)
        return self._capture

    @capture.setter
    def capture(self, capture: Capture) -> None:
        self._capture = capture

    @property
    def graph(self) -> Any:
        """A Graph, or one reached through its store alone, or None (see `reach_graph`)."""
        if self.reach is not None and self._reached is None:
            reached = ExitStack()
            self._graph = reached.enter_context(reach_graph(self.settings, self.db, self.reach))
            self._reached = reached
        return self._graph

    @graph.setter
    def graph(self, graph: Any) -> None:
        """A graph given rather than reached (a Parts' graph may be set)."""
        self._graph, self.reach = graph, None

    def close(self) -> None:
        if self._reached is not None:
            self._reached.close()
        self.db.close()


class Service:
    def __init__(self, parts: Parts, runtime: Runtime | None = None):
        self.parts, self.runtime = parts, runtime
        self.settings, self.db = parts.settings, parts.db

    # --- made and ended ---

    @classmethod
    def start(cls, settings: Settings) -> Service:
        """The server's: open the database and start the engine beside the requests."""
        from engine.runtime import Runtime

        db = Database.open(settings)
        runtime = Runtime(settings, db)
        runtime.start()
        return cls(runtime, runtime)

    def stop(self) -> None:
        if self.runtime is not None:
            self.runtime.stop()
        self.db.close()

    @classmethod
    @contextmanager
    def open(cls, settings: Settings, graph: str | None = None) -> Iterator[Service]:
        """A command's: the data dir's parts, nothing started. With `graph` (the command's
        name, which holds the data dir while it runs the embedded graph), the graph as a
        command reaches it (`reach_graph`), once a part first asks for it."""
        opened = Opened(settings, Database.open(settings), reach=graph)
        try:
            yield cls(opened)
        finally:
            opened.close()

    # --- one entity's memory ---

    def memory(self, entity: str) -> Memory:
        """`entity`'s memory (the caller has made sure it is the caller's)."""
        from engine.api.memory import Memory

        return Memory(self.parts, entity)

    # --- the operator's parts (each loads what it stands on when first asked for) ---

    @cached_property
    def entities(self) -> Entities:
        from engine.api.entities import Entities

        return Entities(self.parts)

    @cached_property
    def stores(self) -> Stores:
        from engine.api.stores import Stores

        return Stores(self.parts)

    @cached_property
    def backups(self) -> Backups:
        from engine.api.backups import Backups

        return Backups(self.settings, self.db)

    @cached_property
    def statuses(self) -> Statuses:
        from engine.api.statuses import Statuses

        return Statuses(self.settings, self.db)

    # --- across the entities ---

    def health(self) -> dict[str, Any]:
        """Each component's status, no data and no names (GET /health)."""
        from engine import health

        assert self.runtime is not None, "only a running server reports its health"
        return health.report(self.runtime)

    def loaded(self) -> bool:
        return self.runtime is None or self.runtime.loaded()

    def queue(self, entity: str | None = None) -> QueueStatus:
        from engine import backlogs

        return backlogs.queue_status(self.db, self.settings, entity)

    def retry(self, entity: str | None = None, dead: bool = False) -> int:
        from engine.store import queue

        return queue.retry(self.db, entity, dead)

    def extracting(self, entity: str) -> int:
        """How many of `entity`'s episodes are being extracted into the graph now."""
        from engine.graph import episodes
        from engine.store import queue

        running = queue.counts(self.db.conn, episodes.JOB_KIND, entity, states=("running",))
        return running["running"]

    # --- rebuilding a derived layer from its source ---

    def reindex(
        self,
        name: str,
        re_embed: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> SyncReport:
        """Rebuild the search index of `name` (an entity, or a shared store's
        `shared:<store>`) from its files and the event log; vectors of another model are
        replaced, and every one with `re_embed`. Raises ModelUnavailable (engine.api.statuses)
        once the files are indexed, when the embedding model cannot load."""
        from engine.search import watch

        return watch.sync(
            self.parts.index, name, rebuild=True, re_embed=re_embed, progress=progress
        )

    def replay_graph(
        self,
        entities: list[str],
        fresh: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ReplayOutcome:
        """Rebuild the graph of `entities` from the event log and wait for it: the running
        server's workers do it, or this process (`fresh`: emptied first, no server
        running). Resumable."""
        from engine.graph import texture

        return texture.rebuild(self.settings, self.db, entities, fresh=fresh, progress=progress)

    def check(self, entities: list[str] | None = None, repair: bool = False) -> CheckReport:
        """Whether every layer agrees with raw capture, for `entities` (every entity and
        shared store the index keeps)."""
        from engine import consistency

        names = self.entities.index_keys() if entities is None else entities
        return consistency.run(self.parts.index, self.parts.graph, names, repair=repair)

    # --- who called ---

    @property
    def _calls(self) -> Recorder:
        assert self.runtime is not None, "calls are recorded by a running server"
        return self.runtime.clients

    def record_call(self, call: Call) -> None:
        self._calls.record(call)

    def clients(self, entity: str) -> list[ClientRecord]:
        return self._calls.clients(entity)

    def recent_calls(self, entity: str, limit: int = 50) -> list[Call]:
        return self._calls.recent(entity, limit)


def _reached(store: Any, why: str | None = None) -> Any:
    """A graph reached through its store alone, as the engine's graph services take it
    (it says it is unreachable when a call fails, and nothing more)."""
    import types

    return types.SimpleNamespace(
        store=store, why=why, unreachable=None, index_error=None, read_failed=lambda: None
    )


@contextmanager
def reach_graph(settings: Settings, db: Database, command: str) -> Iterator[Any]:
    """The graph as a command reaches it (something with `.store`), or None when none is
    configured: an external one (GRAPH_URL, Neo4j) directly; the embedded FalkorDB
    through the running server's socket, or started here under the data dir's lock when
    no server runs (held in `command`'s name). A graph that cannot be reached is a store
    whose reads fail (`pps check` reports it unavailable), or None as its store, with
    `why`."""
    if settings.graph_backend == "none":
        yield None
        return
    from engine.graph.backend import Graph
    from engine.graph.store import GraphStore

    embedded = settings.graph_backend == "falkordb" and not settings.graph_url
    if not embedded:
        store = GraphStore(settings).start()
        try:
            yield _reached(store)
        finally:
            store.stop()
        return
    try:
        lock = DataDirLock.acquire(settings.data_dir, command)
    except DataDirBusy:  # a server runs: its FalkorDB answers on the data dir's socket
        socket = settings.data_dir / "graph" / "falkordb.sock"
        if not socket.exists():
            why = "the server's FalkorDB listens on a port only it knows; GET /v1/check asks it"
            yield _reached(None, why)
            return
        store = GraphStore(settings, falkordb={"unix_socket_path": str(socket)}).start()
        try:
            yield _reached(store)
        finally:
            store.stop()
        return
    graph = None
    try:
        graph = Graph(settings, db).start(sweep=False)
        yield graph
    finally:
        if graph is not None:
            graph.stop()
        lock.release()
