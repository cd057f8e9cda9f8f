"""Layer 5, inventory: what an entity has, and the spaces it moves through.

Items (name, category, subcategory, description, attributes) answer "what's in my
wardrobe?"; spaces (a markdown description, a channel, the items in them) answer "where
am I, and what is here?". Lookups are categorical and exact; the story of each thing is
the graph's job.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field, field_validator

from engine.kernel import timestamps
from engine.kernel.errors import Conflict, NotFound
from engine.kernel.patterns import CHANNEL_PATTERN
from engine.kernel.requests import Request
from engine.store.db import Database

NAME = Field(min_length=1, max_length=200)
SPACE_NAME_PATTERN = r"^(?!\.\.?$)[^/]+$"
"""A space's name is a segment of its URL: no '/', and not '.' or '..' (clients drop those
from URLs). What `SpaceIn` refuses, for the JSON Schema (ECMA-262's `$`: the very end)."""
CATEGORY = Field(pattern=r"^[a-z0-9][a-z0-9 _-]{0,63}$", description="e.g. wardrobe, symbols")


class ItemIn(Request):
    name: str = NAME
    category: str = CATEGORY
    subcategory: str | None = Field(None, pattern=r"^[a-z0-9][a-z0-9 _-]{0,63}$")
    description: str = Field("", max_length=64 * 1024)
    attributes: dict[str, Any] = Field(default_factory=dict)
    space: str | None = Field(None, max_length=200, description="The space it is in.")


class Item(BaseModel):
    id: int
    name: str
    category: str
    subcategory: str | None
    description: str
    attributes: dict[str, Any]
    space: str | None
    created_at: str
    updated_at: str


class Saved(BaseModel):
    item: Item
    created: bool


class SpaceIn(Request):
    name: str = Field(
        min_length=1,
        max_length=200,
        description="Its URL: /v1/spaces/{name}; so no '/', and not '.' or '..'.",
        json_schema_extra={"pattern": SPACE_NAME_PATTERN},
    )
    description: str = Field("", max_length=256 * 1024, description="Markdown.")
    channel: str | None = Field(None, pattern=CHANNEL_PATTERN)

    @field_validator("name")
    @classmethod
    def _one_path_segment(cls, value: str) -> str:
        """A space is reached at /v1/spaces/{name}: a '/' in its name would make a path
        no route matches, and clients fold '.' and '..' away before sending."""
        if "/" in value:
            raise ValueError("must not contain '/': the name is a part of the space's URL")
        if value in (".", ".."):
            raise ValueError(f"{value!r} can not name a space: clients drop it from URLs")
        return value


class SpaceUpdate(Request):
    description: str | None = Field(None, max_length=256 * 1024)
    channel: str | None = Field(None, pattern=CHANNEL_PATTERN)


class Space(BaseModel):
    id: int
    name: str
    description: str
    channel: str | None
    created_at: str
    updated_at: str


class SpaceView(BaseModel):
    space: Space
    items: list[Item]


class Category(BaseModel):
    category: str
    count: int
    subcategories: dict[str, int]


class Items(BaseModel):
    items: list[Item]


class Categories(BaseModel):
    categories: list[Category]


class Spaces(BaseModel):
    spaces: list[Space]


# --- what callers ask (every face builds these; limits and defaults live here) ---


class ItemQuery(Request):
    category: str | None = Field(None, max_length=64)
    subcategory: str | None = Field(None, max_length=64)
    limit: int = Field(100, ge=1, le=1000)


class ItemRef(Request):
    """One item: by name, and by category too when two categories share the name."""

    name: str = NAME
    category: str | None = Field(None, max_length=64)


_ITEM_SELECT = (
    "SELECT i.*, s.name AS space FROM inventory_items i"
    " LEFT JOIN spaces s ON s.id = i.space_id WHERE i.entity = ?"
)


def add(db: Database, entity: str, item: ItemIn) -> Saved:
    """Add an item, or update the one with the same category and name."""
    now = timestamps.now()
    with db.write() as conn:
        space_id = _space_id(conn, entity, item.space) if item.space else None
        existed = conn.execute(
            "SELECT 1 FROM inventory_items WHERE entity = ? AND category = ? AND name = ?",
            (entity, item.category, item.name),
        ).fetchone()
        conn.execute(
            "INSERT INTO inventory_items (entity, name, category, subcategory, description,"
            " attributes, space_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (entity, category, name) DO UPDATE SET"
            " subcategory = excluded.subcategory, description = excluded.description,"
            " attributes = excluded.attributes,"
            " space_id = excluded.space_id, updated_at = excluded.updated_at",
            (
                entity,
                item.name,
                item.category,
                item.subcategory,
                item.description,
                json.dumps(item.attributes),
                space_id,
                now,
                now,
            ),
        )
    found = get(db, entity, ItemRef(name=item.name, category=item.category))
    return Saved(item=found, created=existed is None)


def get(db: Database, entity: str, ref: ItemRef) -> Item:
    """One item by name (and category, when two categories share a name)."""
    name, category = ref.name, ref.category
    rows = _items(
        db,
        entity,
        " AND i.name = ?" + (" AND i.category = ?" if category else ""),
        [name, *([category] if category else [])],
    )
    if not rows:
        raise NotFound(f"no inventory item named {name!r}")
    if len(rows) > 1:
        categories = ", ".join(sorted(r.category for r in rows))
        raise Conflict(
            f"{name!r} is in several categories ({categories}); name the category", "category"
        )
    return rows[0]


def list_items(db: Database, entity: str, ask: ItemQuery) -> Items:
    clauses, params = "", []
    if ask.category:
        clauses, params = " AND i.category = ?", [ask.category]
    if ask.subcategory:
        clauses, params = clauses + " AND i.subcategory = ?", [*params, ask.subcategory]
    return Items(items=_items(db, entity, clauses, params, ask.limit))


def delete(db: Database, entity: str, ref: ItemRef) -> Item:
    item = get(db, entity, ref)
    with db.write() as conn:
        conn.execute("DELETE FROM inventory_items WHERE id = ? AND entity = ?", (item.id, entity))
    return item


def categories(db: Database, entity: str) -> Categories:
    rows = db.conn.execute(
        "SELECT category, COALESCE(subcategory, ''), COUNT(*) FROM inventory_items"
        " WHERE entity = ? GROUP BY 1, 2 ORDER BY 1, 2",
        (entity,),
    ).fetchall()
    found: dict[str, Category] = {}
    for category, subcategory, count in rows:
        entry = found.setdefault(category, Category(category=category, count=0, subcategories={}))
        entry.count += count
        if subcategory:
            entry.subcategories[subcategory] = count
    return Categories(categories=list(found.values()))


def add_space(db: Database, entity: str, space: SpaceIn) -> Space:
    now = timestamps.now()
    with db.write() as conn:
        if conn.execute(
            "SELECT 1 FROM spaces WHERE entity = ? AND name = ?", (entity, space.name)
        ).fetchone():
            raise Conflict(f"a space named {space.name!r} exists; use update_space", "name")
        conn.execute(
            "INSERT INTO spaces (entity, name, description, channel, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (entity, space.name, space.description, space.channel, now, now),
        )
    return _space(db, entity, space.name)


def update_space(db: Database, entity: str, name: str, change: SpaceUpdate) -> Space:
    current = _space(db, entity, name)
    with db.write() as conn:
        conn.execute(
            "UPDATE spaces SET description = ?, channel = ?, updated_at = ? WHERE id = ?",
            (
                current.description if change.description is None else change.description,
                current.channel if change.channel is None else change.channel,
                timestamps.now(),
                current.id,
            ),
        )
    return _space(db, entity, name)


def list_spaces(db: Database, entity: str) -> Spaces:
    rows = db.conn.execute("SELECT * FROM spaces WHERE entity = ? ORDER BY name", (entity,))
    return Spaces(spaces=[_space_from(row) for row in rows])


def enter_space(db: Database, entity: str, name: str, channel: str | None = None) -> SpaceView:
    """Go into a space: remember it as current (per channel) and describe what is there."""
    space = _space(db, entity, name)
    with db.write() as conn:
        conn.execute(
            "INSERT INTO current_spaces (entity, channel, space_id, entered_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (entity, channel) DO UPDATE SET space_id = excluded.space_id,"
            " entered_at = excluded.entered_at",
            (entity, channel or space.channel or "default", space.id, timestamps.now()),
        )
    return view(db, entity, space)


def current_space(db: Database, entity: str, channel: str | None = None) -> SpaceView | None:
    """The space entered last (on this channel, if given)."""
    sql = "SELECT space_id FROM current_spaces WHERE entity = ?"
    params: list = [entity]
    if channel:
        sql, params = sql + " AND channel = ?", [entity, channel]
    row = db.conn.execute(sql + " ORDER BY entered_at DESC LIMIT 1", params).fetchone()
    if row is None:
        return None
    space = db.conn.execute("SELECT * FROM spaces WHERE id = ?", (row[0],)).fetchone()
    return view(db, entity, _space_from(space))


def view(db: Database, entity: str, space: Space) -> SpaceView:
    return SpaceView(space=space, items=_items(db, entity, " AND i.space_id = ?", [space.id]))


def _items(db: Database, entity: str, clauses: str, params: list, limit: int = 1000) -> list[Item]:
    rows = db.conn.execute(
        f"{_ITEM_SELECT}{clauses} ORDER BY i.category, i.subcategory, i.name LIMIT ?",
        [entity, *params, limit],
    ).fetchall()
    return [
        Item.model_validate({**dict(row), "attributes": json.loads(row["attributes"])})
        for row in rows
    ]


def _space(db: Database, entity: str, name: str) -> Space:
    row = db.conn.execute(
        "SELECT * FROM spaces WHERE entity = ? AND name = ?", (entity, name)
    ).fetchone()
    if row is None:
        raise NotFound(f"no space named {name!r}")
    return _space_from(row)


def _space_id(conn, entity: str, name: str) -> int:
    row = conn.execute("SELECT id FROM spaces WHERE entity = ? AND name = ?", (entity, name))
    found = row.fetchone()
    if found is None:
        raise NotFound(f"no space named {name!r}; add it with add_space first", field="space")
    return found[0]


def _space_from(row) -> Space:
    data = dict(row)
    data.pop("entity", None)
    return Space.model_validate(data)
