"""What a running server does in the background, started and stopped with the app:
the queue's workers (one registration per job kind) and the services each layer needs.
Reading this file tells what runs besides the request handlers."""

from __future__ import annotations

import contextlib

from engine import embeddings, episodes, queue, texture, turns, watch
from engine.config import Settings
from engine.db import Database
from engine.index import Index


class Runtime:
    def __init__(self, settings: Settings, db: Database):
        self.settings = settings
        self.db = db
        self.workers = queue.Workers(db, queue.Policy.from_settings(settings))
        # Search (layer 2 and the longform tier): the index with its vectors in memory, the
        # keeper that follows the homes' files, and the workers embedding captured turns.
        embeddings.configure(settings)
        self.index = Index(settings, db)
        self.keeper = watch.Keeper(self.index)
        self.workers.add(turns.JOB_KIND, turns.handler(self.index))
        # Layer 3: the graph backend, its episode sweeper, and the graph_episode workers.
        self.graph = None
        if settings.graph_backend != "none":
            from engine.graph import Graph

            self.graph = Graph(settings, db)
            self.workers.add(
                episodes.JOB_KIND,
                texture.handler(self.graph, db, settings),
                concurrency=settings.graph_concurrency,
            )

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

    def stop(self) -> None:
        self.keeper.stop()
        self.workers.stop()
        if self.graph is not None:
            self.graph.stop()
