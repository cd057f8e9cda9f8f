"""Layer 5, inventory: the entity's categorical lookups (wardrobe, spaces, people)."""

from __future__ import annotations

from engine.api.part import Part
from engine.inventory import items
from engine.inventory.items import (
    Categories,
    Item,
    ItemIn,
    ItemQuery,
    ItemRef,
    Items,
    Saved,
    Space,
    SpaceIn,
    Spaces,
    SpaceUpdate,
    SpaceView,
)


class Inventory(Part):
    def add(self, item: ItemIn) -> Saved:
        return items.add(self.parts.db, self.entity, item)

    def get(self, ref: ItemRef) -> Item:
        return items.get(self.parts.db, self.entity, ref)

    def list(self, ask: ItemQuery) -> Items:
        return items.list_items(self.parts.db, self.entity, ask)

    def delete(self, ref: ItemRef) -> Item:
        return items.delete(self.parts.db, self.entity, ref)

    def categories(self) -> Categories:
        return items.categories(self.parts.db, self.entity)

    def add_space(self, space: SpaceIn) -> Space:
        return items.add_space(self.parts.db, self.entity, space)

    def update_space(self, name: str, change: SpaceUpdate) -> Space:
        return items.update_space(self.parts.db, self.entity, name, change)

    def spaces(self) -> Spaces:
        return items.list_spaces(self.parts.db, self.entity)

    def enter_space(self, name: str, channel: str | None = None) -> SpaceView:
        return items.enter_space(self.parts.db, self.entity, name, channel)
