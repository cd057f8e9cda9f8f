"""How each slow part of the engine stands, checked from a command (`pps doctor`):
`service.statuses`, or `Statuses(settings)` where the database does not open (doctor
checks what it can). A search model that cannot load is a `ModelUnavailable`: a face
catches it by this name."""

from __future__ import annotations

import contextlib
from typing import Any

from engine.crystal import summarize
from engine.graph import backend
from engine.kernel.config import Settings
from engine.kernel.lock import DataDirBusy, DataDirLock
from engine.llm import endpoint
from engine.search import embeddings, rerank
from engine.search.embeddings import Unavailable as ModelUnavailable
from engine.store.db import Database

__all__ = ["ModelUnavailable", "Statuses"]


class Statuses:
    """How each slow part stands, checked from a command (`pps doctor`): each a component
    of /health as the server reports it, found here. The database's and the summaries'
    need a service's database; the others, the settings alone."""

    def __init__(self, settings: Settings, db: Database | None = None):
        self.settings, self.db = settings, db

    def schema_version(self) -> int:
        assert self.db is not None, "a service's database"
        return self.db.schema_version()

    def embeddings(self, load: bool = False) -> dict[str, Any]:
        """With `load`, the model is loaded first (a model that cannot load says why)."""
        if load:
            with contextlib.suppress(embeddings.Unavailable):
                embeddings.get(self.settings)
        return embeddings.status(self.settings)

    def reranker(self, load: bool = False) -> dict[str, Any]:
        """With `load`, the reranker is loaded first where search uses one."""
        if load and self.settings.search_rerank:
            with contextlib.suppress(embeddings.Unavailable):
                rerank.get()
        return rerank.status(self.settings)

    def summaries(self) -> dict[str, Any]:
        assert self.db is not None, "a service's database"
        return summarize.status(self.db, self.settings)

    def graph(self, command: str) -> dict[str, Any]:
        """Start the graph as a server would, ask its status, stop it: under the data
        dir's lock, held in `command`'s name (not checked while another holds it)."""
        if self.settings.graph_backend == "none":
            return backend.graph_health(None)
        if self.db is None:
            return {"status": "down", "error": "the database does not open"}
        try:
            lock = DataDirLock.acquire(self.settings.data_dir, command)
        except DataDirBusy as busy:
            return {"status": "not checked", "reason": str(busy)}
        graph = None
        try:
            graph = backend.Graph(self.settings, self.db).start(sweep=False)
            return graph.status()
        except Exception as exc:  # what is wrong is the answer
            return {"status": "down", "error": f"{type(exc).__name__}: {exc}"}
        finally:
            if graph is not None:
                graph.stop()
            lock.release()

    def llm(self) -> dict[str, Any]:
        """The LLM the settings name (provider, model, where; no key)."""
        return endpoint.describe(self.settings)

    def llm_probe(self) -> dict[str, Any]:
        """Whether the LLM's endpoint answers from here (its models asked, no tokens spent)."""
        return endpoint.probe(self.settings)

    def llm_structured_output(self) -> dict[str, Any]:
        """How an openai_compatible LLM is asked for JSON: the setting, or what was learned."""
        return endpoint.structured_output(self.settings)
