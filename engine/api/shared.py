"""The shared stores: memories several entities keep together (the shared-memory seed),
as one member, or as the operator, acts on them."""

from __future__ import annotations

from pathlib import Path

from engine.contracts import shared_memory
from engine.contracts.shared_memory import (
    Added,
    AddIn,
    ForgetIn,
    Forgotten,
    Indexed,
    Memory,
    SearchIn,
    Stats,
    Updated,
    UpdateIn,
)
from engine.contracts.stores import Access
from engine.search.index import Index


class SharedStore:
    """One store, as its caller (a member, or the operator) may act on it."""

    def __init__(self, index: Index, access: Access):
        self.index, self.access = index, access

    @property
    def name(self) -> str:
        return self.access.store

    def search(self, ask: SearchIn) -> list[Memory]:
        return shared_memory.search_memories(self.index, self.access, ask)

    def add(self, new: AddIn) -> Added:
        return shared_memory.add(self.index, self.access, new)

    def update(self, change: UpdateIn) -> Updated:
        return shared_memory.update(self.index, self.access, change)

    def forget(self, ask: ForgetIn) -> Forgotten:
        return shared_memory.forget(self.index, self.access, ask)

    def stats(self) -> Stats:
        return shared_memory.stats(self.index, self.access)

    def listed(self, limit: int = 200) -> list[Memory]:
        return shared_memory.listed(self.index, self.access, limit)

    def index_folder(self, folder: Path, agent: str) -> Indexed:
        """(The operator's.) Index a folder of markdown files into the store."""
        return shared_memory.index_folder(self.index, self.access, folder, agent)
