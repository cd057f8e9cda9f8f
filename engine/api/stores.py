"""The shared stores, as the operator keeps them (`service.stores`): made, listed, deleted,
their members; `open` is a store to act on (engine/api/shared.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.contracts import stores
from engine.contracts.stores import Deleted, Store

if TYPE_CHECKING:
    from engine.api.parts import Parts
    from engine.api.shared import SharedStore


class Stores:
    """The shared stores, as the operator keeps them."""

    def __init__(self, parts: Parts):
        self.parts = parts

    def list(self) -> list[Store]:
        return stores.list_all(self.parts.db)

    def create(self, name: str, members_edit: bool = False) -> Store:
        return stores.create(self.parts.db, name, members_edit)

    def delete(self, name: str, dry_run: bool = True) -> Deleted:
        return stores.delete(self.parts.index, name, dry_run)

    def add_member(self, store: str, entity: str) -> Store:
        return stores.add_member(self.parts.db, store, entity)

    def remove_member(self, store: str, entity: str) -> Store:
        return stores.remove_member(self.parts.db, store, entity)

    def open(self, store: str) -> SharedStore:
        """The store as the operator acts on it (indexing a folder into it)."""
        from engine.api.shared import SharedStore

        return SharedStore(self.parts.index, stores.as_operator(self.parts.db, store))
