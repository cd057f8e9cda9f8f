"""Graphiti per entity: one Graphiti (and one driver) for each entity, with group_id = the
entity's name, all on one connection to the graph server, all run on one event loop.

How it is wired, and why:
- Graphiti is asyncio; the engine's workers and routes are threads. Every call runs on
  the process's one event loop (engine.kernel.loop) through `call`, so the async drivers
  (bound to the loop they first ran on) are only ever used from that loop; stopping the
  store cancels its calls still running (their callers get an error, their jobs retry).
  A call that cannot reach the server raises `GraphUnavailable` (the work is retried).
- The connection is made on first use, in the caller's thread (FalkorDB's client makes a
  blocking call when it is created), and again after a failure; a per-entity Graphiti is
  made outside the loop, so that its driver does not schedule index building on its own.
- No cross-encoder (searches use the RRF recipes); telemetry is off (engine/__init__.py).
- The indexes are made before the first query, once per graph (`ensure_indices`; on
  Neo4j one database holds every entity's graph), then one first search is run (given
  by the store), so that a recall's budget pays for neither; callers that come while
  they are being made wait for the same making.
- Writes of one entity's graph take its lock (`lock`): Graphiti requires its episodes to
  be added one at a time, whatever the number of workers.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import CancelledError
from typing import Any

from graphiti_core import Graphiti
from graphiti_core.cross_encoder.client import CrossEncoderClient
from graphiti_core.llm_client import LLMClient

from engine.graph.dialects import READ_TIMEOUT_S, Dialect
from engine.graph.embedder import LocalEmbedder
from engine.kernel import loop
from engine.kernel.config import Settings
from engine.llm import client as llm

log = logging.getLogger("pps.graph.store")

FirstSearch = Callable[[Graphiti, str], Awaitable[Any]]
"""The search run once a graph's indexes are made: (the entity's Graphiti, the entity)."""


class GraphUnavailable(RuntimeError):
    """The graph server cannot be reached now (the work is retried later)."""


class EntityGraphs:
    def __init__(
        self, settings: Settings, dialect: Dialect, embedder: LocalEmbedder, first: FirstSearch
    ):
        self.settings = settings
        self._dialect = dialect
        self._embedder = embedder
        self._first_search = first
        self._lock = threading.Lock()
        self._calls = loop.Calls()  # what runs on the loop for this store
        self._client: Any = None  # the shared FalkorDB client or Neo4j driver
        self._graphs: dict[str, Graphiti] = {}
        self._prepared: set[str] = set()  # index keys whose indexes are made
        self._preparing: dict[str, asyncio.Future] = {}  # index key -> the making of them
        self._entity_locks: dict[str, asyncio.Lock] = {}
        self._llm: LLMClient | None = None  # made with the first graph

    # --- lifecycle ---

    def start(self) -> None:
        self._calls.start()

    def stop(self) -> None:
        """Cancel work still running (its callers get an error, their jobs retry), then
        close the shared connection."""
        if not self._calls.open:
            return
        self._calls.stop()
        try:
            loop.run(self._close(), timeout=15)
        except Exception:
            log.exception("closing the graph connection failed")

    async def _close(self) -> None:
        """Stop the indexes still being made (no caller waits for them now), then close
        the shared connection (per-entity drivers share it: never close those)."""
        for making in list(self._preparing.values()):
            making.cancel()
        client, self._client = self._client, None
        if client is not None:
            await self._dialect.close(client)

    # --- what the store uses ---

    def call(self, coro: Coroutine, timeout: float | None = READ_TIMEOUT_S):
        """Run the coroutine on the loop and return what it returns."""
        try:
            return self._calls.run(coro, timeout)
        except loop.Closed:
            raise GraphUnavailable("the graph store is not running") from None
        except TimeoutError:
            raise GraphUnavailable(f"the graph did not answer within {timeout}s") from None
        except CancelledError:
            raise GraphUnavailable("the graph store stopped while this ran") from None
        except (OSError, ConnectionError) as exc:
            raise GraphUnavailable(f"the graph server is unreachable: {exc}") from exc
        except Exception as exc:
            if _unreachable(exc):
                raise GraphUnavailable(f"the graph server is unreachable: {exc}") from exc
            raise

    def graph(self, entity: str) -> Graphiti:
        """The entity's Graphiti, made outside the loop so that drivers do not schedule
        index building on their own (they do when made inside a running loop)."""
        client = self._connect()
        with self._lock:
            graph = self._graphs.get(entity)
            if graph is not None:
                return graph
            if self._llm is None:
                self._llm = llm.client(self.settings)
            graph = Graphiti(
                graph_driver=self._dialect.driver(client, entity),
                llm_client=self._llm,
                embedder=self._embedder,
                cross_encoder=_NoReranker(),
                max_coroutines=self.settings.graph_llm_parallel,
            )
            self._graphs[entity] = graph
            return graph

    def lock(self, entity: str) -> asyncio.Lock:
        """The lock every write of the entity's graph takes (on the loop)."""
        lock = self._entity_locks.get(entity)
        if lock is None:
            lock = self._entity_locks[entity] = asyncio.Lock()
        return lock

    async def ensure_indices(self, entity: str, graph: Graphiti) -> None:
        """The graph's indexes made (and its first search run), once per index key;
        callers that come while they are being made wait for the same making, which
        a caller that gives up does not stop. One that failed is tried again."""
        key = self._dialect.index_key(entity)
        if key in self._prepared:
            return
        making = self._preparing.get(key)
        if making is None:
            making = asyncio.ensure_future(self._make_indices(key, entity, graph))
            self._preparing[key] = making
            making.add_done_callback(lambda done: done.cancelled() or done.exception())
        await asyncio.shield(making)

    def forget(self, entity: str) -> None:
        """The entity's graph was emptied: its indexes are made again before its next use."""
        self._dialect.forget(entity)
        self._prepared.discard(self._dialect.index_key(entity))

    def prepare(self, entity: str | None = None) -> None:
        """Make the indexes the entity's graph needs (None: those all entities share,
        where the server has one database for all), once."""
        entity = entity or self._dialect.shared
        if entity is None:
            return
        self.call(self.ensure_indices(entity, self.graph(entity)), timeout=None)

    def prepared(self, entity: str | None = None) -> bool:
        entity = entity or self._dialect.shared
        return entity is None or self._dialect.index_key(entity) in self._prepared

    def ping(self) -> None:
        """Raise GraphUnavailable unless the graph server answers."""
        client = self._connect()  # outside the loop: see graph()
        self.call(self._dialect.ping(client), timeout=3)

    # --- plumbing ---

    def _connect(self):
        """The shared client, made on first use (and again after a failure), in the
        caller's thread: FalkorDB's client makes a blocking call when it is created."""
        with self._lock:
            if self._client is not None:
                return self._client
            try:
                self._client = self._dialect.connect()
            except Exception as exc:
                raise GraphUnavailable(f"cannot connect to the graph: {exc}") from exc
            return self._client

    async def _make_indices(self, key: str, entity: str, graph: Graphiti) -> None:
        try:
            if not await self._dialect.indexes_made(graph):
                await graph.driver.build_indices_and_constraints()
                await self._dialect.vector_index_state(graph)
                await self._dialect.await_indexes(graph)
            await self._first_search(graph, entity)
            self._prepared.add(key)
        finally:
            self._preparing.pop(key, None)


class _NoReranker(CrossEncoderClient):
    """Searches here use RRF recipes; a cross-encoder call would be a wiring mistake."""

    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        raise RuntimeError("no cross-encoder is configured: use an RRF search recipe")


_UNREACHABLE = {"ConnectionError", "ServiceUnavailable", "SessionExpired", "BusyLoadingError"}


def _unreachable(exc: BaseException) -> bool:
    return bool({type(e).__name__ for e in _chain(exc)} & _UNREACHABLE)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__
