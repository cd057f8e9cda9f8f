"""Shared stores over REST. Members, with their entity token: GET /v1/shared (the
caller's stores) and /v1/shared/{store}/search|add|update|forget|stats, the
shared-memory tools over the same engine functions and request models. A store the
caller is not a member of is 404, as one that does not exist.

Operators, with the operator's token (`pps operator token`; an entity's token is 403):
/v1/operator/shared to list and create stores, add and remove members, delete a store;
/v1/operator/backups to list the backups taken (read-only).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response
from pydantic import BaseModel, Field

from engine.backup import records
from engine.backup.records import BackupRecord
from engine.capture import entities
from engine.contracts import shared_memory as memories
from engine.contracts import stores
from engine.contracts.shared_memory import (
    Added,
    AddIn,
    ForgetIn,
    Forgotten,
    Memory,
    SearchIn,
    Stats,
    Updated,
    UpdateIn,
)
from engine.contracts.stores import Deleted, Store
from engine.kernel.requests import Request
from pps.http.deps import DB, CurrentEntity, Operator, SearchIndex
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/shared", tags=["shared stores"])
operator = APIRouter(prefix="/v1/operator", tags=["operator"], dependencies=[Operator])


# A store's or an entity's name in an operator's path: what `pps` accepts as one.
Name = Annotated[str, Path(pattern=entities.NAME_PATTERN.pattern)]


class Stores(BaseModel):
    stores: list[Store]


class NewStore(Request):
    store: str = Field(
        description="Its name: 1-64 of a-z, 0-9, '_' and '-'.",
        pattern=entities.NAME_PATTERN.pattern,
    )
    members_edit: bool = Field(False, description="Members may change each other's memories.")


# --- members ------------------------------------------------------------------------


@router.get("", summary="The shared stores the caller is a member of")
def mine(entity: CurrentEntity, db: DB) -> Stores:
    return Stores(stores=stores.of_member(db, entity))


@router.post("/{store}/search", summary="memory_search in a shared store")
def search(store: str, body: SearchIn, entity: CurrentEntity, index: SearchIndex) -> list[Memory]:
    return memories.search_memories(index, stores.access(index.db, entity, store), body)


@router.post(
    "/{store}/add",
    status_code=201,
    summary="memory_add to a shared store",
    responses={200: {"model": Added, "description": "The same text, added before: that memory"}},
)
def add(
    store: str, body: AddIn, entity: CurrentEntity, index: SearchIndex, response: Response
) -> Added:
    added = memories.add(index, stores.access(index.db, entity, store), body)
    if added.duplicate:
        response.status_code = 200
    return added


@router.post(
    "/{store}/update",
    summary="memory_update in a shared store (your own memories)",
    responses=problems(403),
)
def update(store: str, body: UpdateIn, entity: CurrentEntity, index: SearchIndex) -> Updated:
    return memories.update(index, stores.access(index.db, entity, store), body)


@router.post(
    "/{store}/forget",
    summary="memory_forget in a shared store (a dry run by default)",
    responses=problems(403),
)
def forget(store: str, body: ForgetIn, entity: CurrentEntity, index: SearchIndex) -> Forgotten:
    return memories.forget(index, stores.access(index.db, entity, store), body)


@router.get("/{store}/stats", summary="memory_stats of a shared store")
def stats(store: str, entity: CurrentEntity, index: SearchIndex) -> Stats:
    return memories.stats(index, stores.access(index.db, entity, store))


# --- operators ----------------------------------------------------------------------


@operator.get("/shared", summary="Every shared store, with its members")
def list_stores(db: DB) -> Stores:
    return Stores(stores=stores.list_all(db))


@operator.post("/shared", status_code=201, summary="Create a shared store", responses=problems(409))
def create(body: NewStore, db: DB) -> Store:
    return stores.create(db, body.store, body.members_edit)


@operator.put("/shared/{store}/members/{entity}", summary="Make an entity a member of a store")
def add_member(store: Name, entity: Name, db: DB) -> Store:
    return stores.add_member(db, store, entity)


@operator.delete("/shared/{store}/members/{entity}", summary="Take a member out; at once")
def remove_member(store: Name, entity: Name, db: DB) -> Store:
    return stores.remove_member(db, store, entity)


@operator.delete("/shared/{store}", summary="Delete a store and its contents (dry run by default)")
def delete(
    store: Name,
    index: SearchIndex,
    yes: Annotated[bool, Query(description="true: delete; else only say what would go.")] = False,
) -> Deleted:
    return stores.delete(index, store, dry_run=not yes)


# --- backups (read-only: a backup is taken, and restored, only by `pps`) ------------


class Backups(BaseModel):
    backups: list[BackupRecord]


@operator.get("/backups", summary="The backups taken (`pps backup`), newest first")
def list_backups(
    db: DB,
    limit: Annotated[int, Query(ge=1, le=1000, description="How many, newest first.")] = 50,
) -> Backups:
    return Backups(backups=records.recent(db, limit))
