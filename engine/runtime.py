"""What a running server does in the background, started and stopped with the app:
the queue's workers (one registration per job kind) and the services each layer needs.
Reading this file tells what runs besides the request handlers."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from engine import forgetting
from engine.capture import clients
from engine.capture.events import Capture, Listener
from engine.crystal import summarize
from engine.graph import curator, episodes, reembed, texture
from engine.kernel.config import Settings
from engine.recall import used
from engine.search import rerank, turns, watch
from engine.search.index import FILE_EMBED_JOB, Index, file_embed_handler
from engine.store import queue
from engine.store.db import Database

log = logging.getLogger("pps.runtime")


CAPTURE_LISTENERS: tuple[Listener, ...] = (
    forgetting.superseded,
    turns.admit,
    episodes.admit,
    used.admit,
)
"""What capture tells of a stored batch, inside its transaction, once it has marked what
an edit or a deletion changed: the replaced versions leave search, the graph and the
summaries (a deleted message is forgotten everywhere), search indexes the new turns'
words at once (their vectors follow as a job), the graph puts them in their episode
windows, recall marks what an assistant's reply used of the recalls before it. The
runtime's `capture` is made with them; a command that stores events without a runtime
makes its own (`Capture(db, CAPTURE_LISTENERS)`)."""


class Runtime:
    def __init__(self, settings: Settings, db: Database):
        self.settings = settings
        self.db = db
        self.capture = Capture(db, CAPTURE_LISTENERS)
        self.workers = queue.Workers(db, queue.Policy.from_settings(settings))
        # Search (layer 2 and the longform tier): the index with its vectors in memory, the
        # keeper that follows the homes' files, and the workers embedding captured turns.
        self.index = Index(settings, db)
        self.keeper = watch.Keeper(self.index)
        self.workers.add(turns.JOB_KIND, turns.handler(self.index))
        self.workers.add(FILE_EMBED_JOB, file_embed_handler(self.index))
        # Layer 3: the graph backend, its episode sweeper, and the graph_episode workers.
        self.graph = None
        if settings.graph_backend != "none":
            from engine.graph.backend import Graph

            self.graph = Graph(settings, db)
            self.workers.add(
                episodes.JOB_KIND,
                texture.handler(self.graph, db, settings),
                concurrency=settings.graph_concurrency,
                ready=self.graph.started,  # its jobs wait in the queue while it starts
            )
            # The graph's vectors made again after a change of embedding model.
            self.workers.add(
                reembed.JOB_KIND,
                reembed.handler(self.graph, db, settings),
                ready=self.graph.started,
            )

        # What a forget withdrew from the graph leaves it (with no graph, there is none).
        self.workers.add(
            episodes.FORGET_JOB,
            texture.forget_handler(self.graph, db),
            ready=self.graph.started if self.graph is not None else None,
        )
        # The graph curator on a schedule (PPS_GRAPH_CURATE_S; off by default: see
        # engine.graph.curator and docs/layers.md).
        self.curator = curator.scheduler(self.graph, db, settings)

        # Forgetting: a message deleted by its client is forgotten as the batch is stored;
        # the old copies of its words leave the database's files just after.
        self.workers.add(forgetting.SCRUB_JOB, forgetting.scrub_handler(db))

        # Layer 4: summaries written by themselves past a threshold, with an LLM.
        self.workers.add(summarize.JOB_KIND, summarize.handler(db, settings))
        self.summarizer = summarize.sweeper(db, settings)

        # Who called: each client's calls, recorded from a thread of its own.
        self.clients = clients.Recorder(db)

        self._loaders: list[tuple[threading.Thread, threading.Event]] = []
        self._stopping = threading.Event()

    def start(self) -> None:
        """Start what runs beside the requests, and load the slow parts on threads of
        their own (the models on one, the graph on another): the server answers at once,
        /health says `starting` for each part still loading, and a request that needs one
        meanwhile gets what it gets when the part is unavailable (search and recall rank
        by words; the graph says it is starting), never a wait."""
        queue.resume(self.db)
        self.clients.start()
        self.workers.start()
        self.keeper.start()
        self.summarizer.start()
        if self.curator is not None:
            self.curator.start()
        # Loaded now, so the first recall (a hook with a 2 s budget) does not pay for them.
        models: list[tuple[str, Callable[[], object]]] = [
            (f"embedding model {self.settings.embedding_model}", self.index.embedder)
        ]
        if self.settings.search_rerank or self.settings.recall_rerank:
            models.append((f"reranker {rerank.MODEL}", rerank.get))
        self._load_beside("pps-load-models", models)
        if self.graph is not None:
            self._load_beside(
                "pps-graph", [(f"graph, {self.graph.backend}", self.graph.start)], self.graph.stop
            )

    def _load_beside(self, name: str, parts: list, stop: Callable[[], None] | None = None):
        """Load `parts` on a thread of its own. With `stop`, the thread lives until the
        runtime stops, then stops what it started: Linux ends the embedded FalkorDB when
        the thread that started it ends (engine.graph.server sets its parent-death signal)."""
        loaded = threading.Event()

        def run() -> None:
            try:
                _load(parts)
            finally:
                loaded.set()
            if stop is not None:
                self._stopping.wait()
                stop()

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        self._loaders.append((thread, loaded))

    def loaded(self) -> bool:
        """Whether every slow part has loaded, or failed to and said why."""
        return all(loaded.is_set() for _, loaded in self._loaders)

    def wait_loaded(self) -> None:
        """Return once `loaded()`: for what queries at once and must not be answered
        without the models (the benchmarks)."""
        for _, loaded in self._loaders:
            loaded.wait()

    def stop(self) -> None:
        for _, loaded in self._loaders:
            loaded.wait()  # a part is stopped only once it has started
        if self.curator is not None:
            self.curator.stop()
        self.summarizer.stop()
        self.keeper.stop()
        self.workers.stop()
        self.clients.stop()
        self._stopping.set()  # the graph's thread stops the graph, last
        for thread, _ in self._loaders:
            thread.join()


def _load(parts: list[tuple[str, Callable[[], object]]]) -> None:
    """Load each part in turn, saying what loads and how long it took. One that cannot
    load is logged, and /health says why (search ranks by words, the graph's jobs wait)."""
    for name, load in parts:
        log.info("loading the %s", name)
        began = time.monotonic()
        try:
            load()
        except Exception as exc:  # the server runs on without it
            log.error("the %s did not load (%.1f s): %s", name, time.monotonic() - began, exc)
            continue
        log.info("the %s loaded in %.1f s", name, time.monotonic() - began)
