"""What the queue page, `pps queue` and GET /v1/queue show: the job queue's state
(engine/store/queue.py) with the work each layer is still going through in its own
units (`Backlog`): the search index's vectors after a model change or a burst of turns."""

from __future__ import annotations

from engine.kernel.config import Settings
from engine.search.index import vector_backlog
from engine.store import queue
from engine.store.db import Database


def queue_status(db: Database, settings: Settings, entity: str | None = None) -> queue.QueueStatus:
    """The queue of every entity (or of the one) and their backlogs."""
    status = queue.status(db, entity)
    status.backlogs = vector_backlog(db, settings.embedding_model, entity)
    return status
