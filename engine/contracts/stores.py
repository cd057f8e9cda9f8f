"""Shared stores: a named memory that several entities search and write, which an entity
joins only by an operator's act (`pps shared add`, or the operator's token over REST),
never by a tool call of its own.

A store is a home of its own, `<data dir>/shared/<store>/`, holding fragments only,
indexed under the key `shared:<store>` (engine/search/homes.py), so search ranks it as
it ranks an entity's memory. The database records the store, its members, and for each
memory who wrote it (engine/contracts/shared_memory.py). Membership is read on every
call: removing a member ends its access at once.

An entity names a store only among its own: a store it is not a member of is "not
found", exactly as one that does not exist.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from pydantic import BaseModel

from engine.capture import entities
from engine.kernel import timestamps
from engine.kernel.errors import Conflict, InputError, NotFound
from engine.search import homes
from engine.search import index as search_index
from engine.search.index import Index
from engine.store.db import Database

OPERATOR = "operator"
"""The writer recorded for what the operator writes (the folder indexer)."""
_HOW = "an operator makes one with `pps shared create STORE` and `pps shared add STORE ENTITY`"


@dataclass(frozen=True)
class Access:
    """Who acts on which store: a member (its entity name) or the operator."""

    store: str
    caller: str
    members_edit: bool

    @property
    def key(self) -> str:
        return homes.store_key(self.store)

    def may_change(self, written_by: str) -> bool:
        """A member changes what it wrote; every memory when the store allows members
        to edit each other's (created with --members-edit)."""
        return written_by == self.caller or (self.members_edit and self.caller != OPERATOR)


class Store(BaseModel):
    name: str
    members_edit: bool
    members: list[str]
    memories: int
    created_at: str


class Deleted(BaseModel):
    store: str
    memories: int
    files: int
    members: list[str]
    dry_run: bool


def check_name(name: str, field: str = "store") -> str:
    if not isinstance(name, str) or not entities.NAME_PATTERN.fullmatch(name):
        raise InputError.of(
            field,
            f"{name!r} is not a valid store name: use 1-64 characters of a-z, 0-9, '_' "
            "and '-', starting with a letter or digit",
        )
    return name


# --- operator acts ------------------------------------------------------------------


def create(db: Database, name: str, members_edit: bool = False) -> Store:
    check_name(name)
    now = timestamps.now()
    with db.write() as conn:
        if conn.execute("SELECT 1 FROM shared_stores WHERE name = ?", (name,)).fetchone():
            raise Conflict(f"shared store {name!r} already exists")
        conn.execute(
            "INSERT INTO shared_stores (name, members_edit, created_at) VALUES (?, ?, ?)",
            (name, int(members_edit), now),
        )
        entities.add_index_key(conn, homes.store_key(name), now)
    return get(db, name)


def add_member(db: Database, store: str, entity: str) -> Store:
    check_name(store)
    with db.write() as conn:
        _exists(conn, store)
        if entity.startswith(homes.SHARED_KEY) or not entities.exists(db, entity):
            raise NotFound(f"no entity named {entity!r}", field="entity")
        conn.execute(
            "INSERT OR IGNORE INTO shared_members (store, entity, added_at) VALUES (?, ?, ?)",
            (store, entity, timestamps.now()),
        )
    return get(db, store)


def remove_member(db: Database, store: str, entity: str) -> Store:
    """Take an entity out of a store; its next call finds no store. What it wrote
    stays, attributed to it."""
    check_name(store)
    with db.write() as conn:
        _exists(conn, store)
        removed = conn.execute(
            "DELETE FROM shared_members WHERE store = ? AND entity = ?", (store, entity)
        ).rowcount
        if not removed:
            raise NotFound(f"{entity!r} is not a member of {store!r}", field="entity")
    return get(db, store)


def list_all(db: Database) -> list[Store]:
    names = [r[0] for r in db.conn.execute("SELECT name FROM shared_stores ORDER BY name")]
    return [get(db, name) for name in names]


def get(db: Database, name: str) -> Store:
    conn = db.conn
    row = conn.execute(
        "SELECT name, members_edit, created_at FROM shared_stores WHERE name = ?", (name,)
    ).fetchone()
    if row is None:
        raise NotFound(f"no shared store named {name!r}", field="store")
    members = [
        r[0]
        for r in conn.execute(
            "SELECT entity FROM shared_members WHERE store = ? ORDER BY entity", (name,)
        )
    ]
    count = conn.execute("SELECT COUNT(*) FROM shared_memories WHERE store = ?", (name,))
    return Store(
        name=row["name"],
        members_edit=bool(row["members_edit"]),
        members=members,
        memories=count.fetchone()[0],
        created_at=row["created_at"],
    )


def delete(index: Index, name: str, dry_run: bool = True) -> Deleted:
    """Delete a store and everything of it: its files, its index rows, its memories'
    records and its memberships. A dry run (the default) only says what would go."""
    store = get(index.db, check_name(name))
    key = homes.store_key(name)
    root = homes.shared_dir(index.settings) / name
    files = sum(1 for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0
    deleted = Deleted(
        store=name, memories=store.memories, files=files, members=store.members, dry_run=dry_run
    )
    if dry_run:
        return deleted
    try:
        with index.db.write() as conn:
            search_index.drop_key(conn, key)
            conn.execute("DELETE FROM shared_stores WHERE name = ?", (name,))
            entities.drop_index_key(conn, key)
    finally:
        index.cache.invalidate(key)
    shutil.rmtree(root, ignore_errors=True)
    return deleted


# --- members ------------------------------------------------------------------------


def of_member(db: Database, entity: str) -> list[Store]:
    """The stores the entity is a member of."""
    names = [
        r[0]
        for r in db.conn.execute(
            "SELECT store FROM shared_members WHERE entity = ? ORDER BY store", (entity,)
        )
    ]
    return [get(db, name) for name in names]


def access(db: Database, entity: str, store: str | None = None) -> Access:
    """The store an entity's call works on: the one named (only among its own stores),
    else its only one. Never its private memory."""
    rows = db.conn.execute(
        "SELECT s.name, s.members_edit FROM shared_members m"
        " JOIN shared_stores s ON s.name = m.store WHERE m.entity = ? ORDER BY s.name",
        (entity,),
    ).fetchall()
    mine = {r["name"]: bool(r["members_edit"]) for r in rows}
    if store is not None:
        if store not in mine:
            raise NotFound(f"no shared store {store!r} among yours", field="store")
        return Access(store, entity, mine[store])
    if not mine:
        raise NotFound(f"you are a member of no shared store; {_HOW}", field="store")
    if len(mine) > 1:
        raise InputError.of(
            "store",
            f"you are a member of several shared stores ({', '.join(mine)}): name one"
            " (the store argument, or the path /mcp/shared-memory/STORE)",
        )
    (only,) = mine
    return Access(only, entity, mine[only])


def as_operator(db: Database, store: str) -> Access:
    found = get(db, check_name(store))
    return Access(found.name, OPERATOR, found.members_edit)


def _exists(conn, store: str) -> None:
    if not conn.execute("SELECT 1 FROM shared_stores WHERE name = ?", (store,)).fetchone():
        raise NotFound(f"no shared store named {store!r}", field="store")
