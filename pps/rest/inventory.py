"""Layer 5 over REST: inventory items and spaces."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import Field

from engine.inventory import items as inventory
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
from engine.kernel.patterns import CHANNEL_PATTERN
from engine.kernel.requests import Request
from pps.http.deps import DB, CurrentEntity
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1", tags=["inventory"])


class Enter(Request):
    channel: str | None = Field(None, pattern=CHANNEL_PATTERN)


@router.get("/inventory", summary="Items, by category and subcategory")
def inventory_list(query: Annotated[ItemQuery, Query()], entity: CurrentEntity, db: DB) -> Items:
    return inventory.list_items(db, entity, query)


@router.post(
    "/inventory",
    summary="Add an item (or update the one with that category and name)",
    responses=problems(404),
)
def inventory_add(body: ItemIn, entity: CurrentEntity, db: DB) -> Saved:
    return inventory.add(db, entity, body)


@router.get("/inventory/categories", summary="Categories with counts and subcategories")
def inventory_categories(entity: CurrentEntity, db: DB) -> Categories:
    return inventory.categories(db, entity)


@router.get("/inventory/item", summary="One item by name", responses=problems(404, 409))
def inventory_get(query: Annotated[ItemRef, Query()], entity: CurrentEntity, db: DB) -> Item:
    return inventory.get(db, entity, query)


@router.delete("/inventory/item", summary="Delete one item by name", responses=problems(404, 409))
def inventory_delete(query: Annotated[ItemRef, Query()], entity: CurrentEntity, db: DB) -> Item:
    return inventory.delete(db, entity, query)


@router.get("/spaces", summary="Every space")
def list_spaces(entity: CurrentEntity, db: DB) -> Spaces:
    return inventory.list_spaces(db, entity)


@router.post("/spaces", summary="Add a space", responses=problems(409))
def add_space(body: SpaceIn, entity: CurrentEntity, db: DB) -> Space:
    return inventory.add_space(db, entity, body)


@router.patch("/spaces/{name}", summary="Change a space's description or channel")
def update_space(name: str, body: SpaceUpdate, entity: CurrentEntity, db: DB) -> Space:
    return inventory.update_space(db, entity, name, body)


@router.post("/spaces/{name}/enter", summary="Enter a space: its description and what is there")
def enter_space(name: str, entity: CurrentEntity, db: DB, body: Enter | None = None) -> SpaceView:
    return inventory.enter_space(db, entity, name, (body or Enter()).channel)
