"""What a `Memory` stands on: the typed parts of the engine behind the front door."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # named for the type checker: a part loads what it uses when it is used
    from engine.capture.events import Capture
    from engine.graph.backend import Graph
    from engine.kernel.config import Settings
    from engine.search.index import Index
    from engine.store.db import Database


class Parts(Protocol):
    """The running server's `engine.runtime.Runtime` is one; `Service.open` makes one for
    a command. `capture` stores events and tells every layer of them (search, the graph,
    forgetting, recall's used marks): no caller can store an event the others miss."""

    settings: Settings
    db: Database
    index: Index
    graph: Graph | None
    capture: Capture
