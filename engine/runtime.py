"""What a running server does in the background, started and stopped with the app:
the queue's workers (one registration per job kind) and the services each layer needs.
Reading this file tells what runs besides the request handlers."""

from __future__ import annotations

import contextlib

from engine.crystal import summarize
from engine.graph import curator, episodes, texture
from engine.search import embeddings, turns, watch
from engine.search.index import FILE_EMBED_JOB, Index, file_embed_handler
from engine.store import queue
from engine.store.config import Settings
from engine.store.db import Database

CAPTURE_LISTENERS = (turns.admit, episodes.admit)
"""What capture announces a stored batch to, inside its transaction: search indexes the
new turns' words at once (their vectors follow as a job), the graph puts them in their
episode windows. Every writer of events passes these to `capture.record`."""


class Runtime:
    def __init__(self, settings: Settings, db: Database):
        self.settings = settings
        self.db = db
        self.announce = CAPTURE_LISTENERS
        self.workers = queue.Workers(db, queue.Policy.from_settings(settings))
        # Search (layer 2 and the longform tier): the index with its vectors in memory, the
        # keeper that follows the homes' files, and the workers embedding captured turns.
        embeddings.configure(settings)
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
            )
        # The graph curator on a schedule (PPS_GRAPH_CURATE_S; off by default: see
        # engine.graph.curator and docs/layers.md).
        self.curator = curator.scheduler(self.graph, db, settings)

        # Layer 4: summaries written by themselves past a threshold, with an LLM.
        self.workers.add(summarize.JOB_KIND, summarize.handler(db, settings))
        self.summarizer = summarize.sweeper(db, settings)

    def start(self) -> None:
        # Load the model now, so the first recall (a hook with a 2 s budget) does not
        # pay for it; if it cannot load, search falls back to BM25 and says so.
        with contextlib.suppress(embeddings.Unavailable):
            embeddings.get(self.settings)
        queue.resume(self.db)
        if self.graph is not None:
            self.graph.start()
        self.workers.start()
        self.keeper.start()
        self.summarizer.start()
        if self.curator is not None:
            self.curator.start()

    def stop(self) -> None:
        if self.curator is not None:
            self.curator.stop()
        self.summarizer.stop()
        self.keeper.stop()
        self.workers.stop()
        if self.graph is not None:
            self.graph.stop()
