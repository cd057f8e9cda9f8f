"""Shared stores over REST. Members, with their entity token: GET /v1/shared (the
caller's stores) and /v1/shared/{store}/search|add|update|forget|stats, the
shared-memory tools over the same front door and request models. A store the
caller is not a member of is 404, as one that does not exist.

Operators, with the operator's token (`pps operator token`; an entity's token is 403):
/v1/operator/shared to list and create stores, add and remove members, delete a store;
/v1/operator/backups to list the backups taken (read-only).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response
from pydantic import BaseModel, Field

from engine.api.entities import Entities
from engine.backup.records import BackupRecord
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
from pps.http.deps import AppService, CurrentMemory, Operator
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/shared", tags=["shared stores"])
operator = APIRouter(prefix="/v1/operator", tags=["operator"], dependencies=[Operator])


# A store's or an entity's name in an operator's path: what `pps` accepts as one.
Name = Annotated[str, Path(pattern=Entities.NAME_PATTERN)]


class Stores(BaseModel):
    stores: list[Store]


class NewStore(Request):
    store: str = Field(
        description="Its name: 1-64 of a-z, 0-9, '_' and '-'.",
        pattern=Entities.NAME_PATTERN,
    )
    members_edit: bool = Field(False, description="Members may change each other's memories.")


# --- members ------------------------------------------------------------------------


@router.get("", summary="The shared stores the caller is a member of")
def mine(memory: CurrentMemory) -> Stores:
    return Stores(stores=memory.stores())


@router.post("/{store}/search", summary="memory_search in a shared store")
def search(store: str, body: SearchIn, memory: CurrentMemory) -> list[Memory]:
    return memory.shared(store).search(body)


@router.post(
    "/{store}/add",
    status_code=201,
    summary="memory_add to a shared store",
    responses={200: {"model": Added, "description": "The same text, added before: that memory"}},
)
def add(store: str, body: AddIn, memory: CurrentMemory, response: Response) -> Added:
    added = memory.shared(store).add(body)
    if added.duplicate:
        response.status_code = 200
    return added


@router.post(
    "/{store}/update",
    summary="memory_update in a shared store (your own memories)",
    responses=problems(403),
)
def update(store: str, body: UpdateIn, memory: CurrentMemory) -> Updated:
    return memory.shared(store).update(body)


@router.post(
    "/{store}/forget",
    summary="memory_forget in a shared store (a dry run by default)",
    responses=problems(403),
)
def forget(store: str, body: ForgetIn, memory: CurrentMemory) -> Forgotten:
    return memory.shared(store).forget(body)


@router.get("/{store}/stats", summary="memory_stats of a shared store")
def stats(store: str, memory: CurrentMemory) -> Stats:
    return memory.shared(store).stats()


# --- operators ----------------------------------------------------------------------


@operator.get("/shared", summary="Every shared store, with its members")
def list_stores(service: AppService) -> Stores:
    return Stores(stores=service.stores.list())


@operator.post("/shared", status_code=201, summary="Create a shared store", responses=problems(409))
def create(body: NewStore, service: AppService) -> Store:
    return service.stores.create(body.store, body.members_edit)


@operator.put("/shared/{store}/members/{entity}", summary="Make an entity a member of a store")
def add_member(store: Name, entity: Name, service: AppService) -> Store:
    return service.stores.add_member(store, entity)


@operator.delete("/shared/{store}/members/{entity}", summary="Take a member out; at once")
def remove_member(store: Name, entity: Name, service: AppService) -> Store:
    return service.stores.remove_member(store, entity)


@operator.delete("/shared/{store}", summary="Delete a store and its contents (dry run by default)")
def delete(
    store: Name,
    service: AppService,
    yes: Annotated[bool, Query(description="true: delete; else only say what would go.")] = False,
) -> Deleted:
    return service.stores.delete(store, dry_run=not yes)


# --- backups (read-only: a backup is taken, and restored, only by `pps`) ------------


class Backups(BaseModel):
    backups: list[BackupRecord]


@operator.get("/backups", summary="The backups taken (`pps backup`), newest first")
def list_backups(
    service: AppService,
    limit: Annotated[int, Query(ge=1, le=1000, description="How many, newest first.")] = 50,
) -> Backups:
    return Backups(backups=service.backups.recent(limit))
