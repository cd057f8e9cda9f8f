"""Layer 5 over REST: inventory items and spaces."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import Field

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
from pps.http.deps import CurrentMemory
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1", tags=["inventory"])


class Enter(Request):
    channel: str | None = Field(None, pattern=CHANNEL_PATTERN)


@router.get("/inventory", summary="Items, by category and subcategory")
def inventory_list(query: Annotated[ItemQuery, Query()], memory: CurrentMemory) -> Items:
    return memory.inventory.list(query)


@router.post(
    "/inventory",
    summary="Add an item (or update the one with that category and name)",
    responses=problems(404),
)
def inventory_add(body: ItemIn, memory: CurrentMemory) -> Saved:
    return memory.inventory.add(body)


@router.get("/inventory/categories", summary="Categories with counts and subcategories")
def inventory_categories(memory: CurrentMemory) -> Categories:
    return memory.inventory.categories()


@router.get("/inventory/item", summary="One item by name", responses=problems(404, 409))
def inventory_get(query: Annotated[ItemRef, Query()], memory: CurrentMemory) -> Item:
    return memory.inventory.get(query)


@router.delete("/inventory/item", summary="Delete one item by name", responses=problems(404, 409))
def inventory_delete(query: Annotated[ItemRef, Query()], memory: CurrentMemory) -> Item:
    return memory.inventory.delete(query)


@router.get("/spaces", summary="Every space")
def list_spaces(memory: CurrentMemory) -> Spaces:
    return memory.inventory.spaces()


@router.post("/spaces", summary="Add a space", responses=problems(409))
def add_space(body: SpaceIn, memory: CurrentMemory) -> Space:
    return memory.inventory.add_space(body)


@router.patch("/spaces/{name}", summary="Change a space's description or channel")
def update_space(name: str, body: SpaceUpdate, memory: CurrentMemory) -> Space:
    return memory.inventory.update_space(name, body)


@router.post("/spaces/{name}/enter", summary="Enter a space: its description and what is there")
def enter_space(name: str, memory: CurrentMemory, body: Enter | None = None) -> SpaceView:
    return memory.inventory.enter_space(name, (body or Enter()).channel)
