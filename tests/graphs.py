"""The graph servers the graph tests run on, behind one small interface, so that each of
those tests runs on both backends (the `graph_target` fixture in conftest.py):

- `Falkor`: the embedded FalkorDB, pps's default. Each data dir has its own server,
  supervised by `pps serve` (killed, it is started again within a second).
- `Neo4j`: the launcher's Neo4j 5.26 (tests/neo4j_server.py), one for the session, as
  compose runs one for every entity. Nothing restarts it but the test, as a service
  manager would; `fresh()` empties it for tests that reuse entity names.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.capture import entities
from engine.graph import episodes, texture
from engine.graph.backend import Graph
from engine.graph.server import FalkorServer
from engine.graph.store import GraphStore
from engine.kernel.config import Settings
from engine.store import queue
from engine.store.db import Database
from tests.neo4j_server import Neo4jServer


class Falkor:
    backend = "falkordb"

    def settings(self) -> dict[str, Any]:
        return {"graph_backend": "falkordb", "graph_url": None}

    def fresh(self) -> None:
        """Nothing to do: every data dir has a graph of its own."""

    def new(self) -> None:
        """Nothing to do: every data dir's graph starts with no data and no indexes."""

    def pid(self, data_dir: Path) -> int:
        return int((data_dir / "graph" / "falkordb.pid").read_text())

    def kill(self, data_dir: Path) -> None:
        """SIGKILL the graph server of the data dir's `pps serve`."""
        os.kill(self.pid(data_dir), signal.SIGKILL)

    def revive(self) -> None:
        """Nothing to do: `pps serve` starts the embedded server again by itself."""

    @contextmanager
    def own(self, folder: Path) -> Iterator[Switch]:
        """A server that stays down when stopped: a FalkorDB of the test's own, given to
        pps as GRAPH_URL (the embedded one is started again within a second)."""
        server = FalkorServer(folder).start()
        where = (
            f"redis://127.0.0.1:{server.port}" if server.port else f"unix://{server.socket_path}"
        )
        try:
            yield Switch(
                {"graph_backend": "falkordb", "graph_url": where}, server.stop, server.start
            )
        finally:
            server.stop()

    def episodes(self, data_dir: Path, entity: str) -> list[str]:
        """The complete episodes in the graph, read with the data dir's server stopped."""
        with FalkorServer(data_dir) as falkordb:
            return _episodes(
                Settings(data_dir=data_dir, **self.settings()), entity, falkordb.connection
            )

    def lose(self, data_dir: Path, entity: str) -> None:
        """The graph is lost (its files deleted), the log is not."""
        shutil.rmtree(data_dir / "graph")


class Neo4j:
    backend = "neo4j"

    def __init__(self, server: Neo4jServer):
        self.server = server

    def settings(self) -> dict[str, Any]:
        return self.server.settings()

    def fresh(self) -> None:
        self.server.wipe()

    def new(self) -> None:
        """The server as a new one is: no data, no indexes (the session's server keeps
        the indexes of the tests before)."""
        self.server.wipe(indexes=True)

    def pid(self, data_dir: Path) -> int:
        return self.server.pid

    def kill(self, data_dir: Path) -> None:
        self.server.kill()

    def revive(self) -> None:
        self.server.start()

    @contextmanager
    def own(self, folder: Path) -> Iterator[Switch]:
        """The session's server, up again at the end whatever the test left."""
        try:
            yield Switch(self.settings(), self.server.stop, self.server.start)
        finally:
            if not self.server.running:
                self.server.start()

    def episodes(self, data_dir: Path, entity: str) -> list[str]:
        return _episodes(Settings(data_dir=data_dir, **self.settings()), entity, None)

    def lose(self, data_dir: Path, entity: str) -> None:
        store = GraphStore(Settings(data_dir=data_dir, **self.settings())).start()
        try:
            store.clear(entity)
        finally:
            store.stop()


class Switch:
    """A graph server the test stops and starts, and the settings that point at it."""

    def __init__(self, settings: dict[str, Any], stop, start):
        self.settings, self.stop, self.start = settings, stop, start


def _episodes(settings: Settings, entity: str, falkordb: dict | None) -> list[str]:
    store = GraphStore(settings, falkordb=falkordb).start()
    try:
        return store.episode_uuids(entity)
    finally:
        store.stop()


@contextmanager
def extracting(policy: queue.Policy) -> Iterator[Callable[[Settings], tuple]]:
    """start(settings) -> (graph, db, entity): a graph on `settings`, the queue's workers
    extracting its episodes under `policy`, and a new entity; each call is the service
    started (again, on the same data: restarted). All of it is stopped at the end."""
    running: list[tuple] = []

    def start(settings: Settings) -> tuple:
        db = Database.open(settings)
        graph = Graph(settings, db).start(sweep=False)
        workers = queue.Workers(db, policy)
        workers.add(episodes.JOB_KIND, texture.handler(graph, db, settings))
        running.append((workers, graph, db))
        entity = f"e{time.monotonic_ns()}"
        entities.create(db, entity)
        workers.start()
        return graph, db, entity

    try:
        yield start
    finally:
        for workers, graph, db in running:
            workers.stop()
            graph.stop()
            db.close()
