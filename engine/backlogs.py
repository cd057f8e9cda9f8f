"""What the queue page, `pps queue` and GET /v1/queue show: the job queue's state
(engine/store/queue.py) with the work each layer is still going through in its own
units (`Backlog`): the search index's vectors and the graph's after a model change or a
burst of turns, and the episodes waiting for extraction with when they should be through
(engine/graph/backlog.py)."""

from __future__ import annotations

from collections.abc import Iterator

from engine.capture import entities
from engine.graph import backlog, reembed
from engine.kernel.config import Settings
from engine.search.check import vector_backlog
from engine.store import queue
from engine.store.db import Database


def queue_status(db: Database, settings: Settings, entity: str | None = None) -> queue.QueueStatus:
    """The queue of every entity (or of the one) and their backlogs."""
    status = queue.status(db, entity)
    names = [entity] if entity else [e.name for e in entities.list_all(db)]
    status.backlogs = [
        *vector_backlog(db, settings.embedding_model, entity),
        *_graph(db, settings, names),
    ]
    return status


def _graph(db: Database, settings: Settings, names: list[str]) -> Iterator[queue.Backlog]:
    for name in names:
        if (moving := reembed.reembedding(db, name)) is not None:
            model, done, total = moving
            yield queue.Backlog(
                entity=name, what="graph vectors", model=model, done=done, total=total
            )
        found = backlog.estimate(db, settings, name)
        if found.jobs:
            yield queue.Backlog(
                entity=name,
                what="graph episodes",
                total=found.jobs,
                clears_in_s=found.clears_in_s,
                held=found.held,
            )
