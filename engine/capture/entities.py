"""Entities and their bearer tokens. The token decides the entity on every request.

A token is shown once, when it is made; only its SHA-256 is stored (tokens are 256
random bits, so a plain hash is enough to make a stolen database useless for auth).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import sqlite3
from dataclasses import dataclass
from typing import NamedTuple

from engine.kernel import timestamps
from engine.kernel.errors import Conflict, InputError, NotFound
from engine.store.db import Database

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
TOKEN_PREFIX = "pps_"
OPERATOR_PREFIX = "ppsop_"
RESERVED = ":"
"""Index keys that are not entities (a shared store's `shared:<name>`) hold this; no
entity name can."""


@dataclass(frozen=True)
class Entity:
    name: str
    created_at: str
    rotated_at: str | None


def check_name(name: str) -> str:
    if not NAME_PATTERN.fullmatch(name):
        raise InputError.of(
            "name",
            f"{name!r} is not a valid entity name: use 1-64 characters of a-z, 0-9, '_' "
            "and '-', starting with a letter or digit",
        )
    return name


def create(db: Database, name: str) -> str:
    """Create an entity and return its new token."""
    check_name(name)
    token = _new_token()
    with db.write() as conn:
        if conn.execute("SELECT 1 FROM entities WHERE name = ?", (name,)).fetchone():
            raise Conflict(f"entity {name!r} already exists (use `pps entity rotate {name}`)")
        conn.execute(
            "INSERT INTO entities (name, token_hash, created_at) VALUES (?, ?, ?)",
            (name, _hash(token), timestamps.now()),
        )
    return token


def rotate(db: Database, name: str) -> str:
    """Replace an entity's token; the old one stops working at once."""
    check_name(name)
    token = _new_token()
    with db.write() as conn:
        updated = conn.execute(
            "UPDATE entities SET token_hash = ?, rotated_at = ? WHERE name = ?",
            (_hash(token), timestamps.now(), name),
        ).rowcount
    if not updated:
        raise NotFound(f"no entity named {name!r}")
    return token


_ISSUED = "coalesce(rotated_at, created_at)"
"""When an entity's current token was made, in SQL."""


def token_issued(db: Database, name: str) -> str | None:
    """When the entity's current token was made (created, or last rotated); None if no
    entity has this name. A web session keeps the `Holder.issued` it was started
    with and ends when this differs: a rotation signs every browser out."""
    row = db.conn.execute(
        f"SELECT {_ISSUED} AS issued FROM entities WHERE name = ?",
        (name,),
    ).fetchone()
    return row["issued"] if row else None


def list_all(db: Database) -> list[Entity]:
    rows = db.conn.execute(
        "SELECT name, created_at, rotated_at FROM entities WHERE instr(name, ?) = 0 ORDER BY name",
        (RESERVED,),
    )
    return [Entity(**row) for row in rows]


class Holder(NamedTuple):
    entity: str
    issued: str
    """When the token was made (the entity created, or its token last rotated)."""


def holder(db: Database, token: str) -> Holder | None:
    """The entity a token belongs to, and when that token was issued; None if it is no
    entity's token."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    row = db.conn.execute(
        f"SELECT name, {_ISSUED} AS issued FROM entities WHERE token_hash = ?",
        (_hash(token),),
    ).fetchone()
    return Holder(row["name"], row["issued"]) if row else None


def authenticate(db: Database, token: str) -> str | None:
    """The entity a token belongs to, or None."""
    found = holder(db, token)
    return found.entity if found else None


def rotate_operator(db: Database) -> str:
    """Make the operator's token (the one credential for operator acts over REST, such
    as adding a member to a shared store), replacing any before it; return it."""
    token = _new_token(OPERATOR_PREFIX)
    with db.write() as conn:
        conn.execute(
            "INSERT INTO operator_tokens (id, token_hash, created_at) VALUES (1, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET token_hash = excluded.token_hash,"
            " created_at = excluded.created_at",
            (_hash(token), timestamps.now()),
        )
    return token


def is_operator(db: Database, token: str) -> bool:
    """Whether the token is the operator's."""
    if not token.startswith(OPERATOR_PREFIX):
        return False
    row = db.conn.execute("SELECT token_hash FROM operator_tokens WHERE id = 1").fetchone()
    return row is not None and secrets.compare_digest(row[0], _hash(token))


def _new_token(prefix: str = TOKEN_PREFIX) -> str:
    return prefix + secrets.token_urlsafe(32)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


# Asked by search and graph: the names the index and the graph keep one for (capture owns
# `entities`).


def index_keys(db: Database) -> list[str]:
    """Every name in the entities table, by name: the entities and the index keys that
    are not entities (a shared store's `shared:<name>`, see RESERVED)."""
    return [r[0] for r in db.conn.execute("SELECT name FROM entities ORDER BY name")]


# Asked by faces: `pps entity create` and `pps import` take back an entity whose token
# could not be delivered, without SQL of their own.
def forget_undelivered(db: Database, name: str) -> None:
    """Remove an entity just created whose token could not be delivered (nothing can
    refer to it yet: nobody has its token)."""
    with db.write() as conn:
        conn.execute("DELETE FROM entities WHERE name = ?", (name,))


# Asked by contracts: a shared store's index key (`shared:<store>`) has a row here, which
# engine/contracts/stores.py adds and removes in its own transactions.


def exists(db: Database, name: str) -> bool:
    """Whether the name has a row: an entity, or an index key added by add_index_key."""
    return db.conn.execute("SELECT 1 FROM entities WHERE name = ?", (name,)).fetchone() is not None


def add_index_key(conn: sqlite3.Connection, key: str, created_at: str) -> None:
    """Give an index key that is no entity (it holds RESERVED) its row, in the caller's
    transaction, if it has none: its token hash is no SHA-256 hex, so no token matches it."""
    conn.execute(
        "INSERT OR IGNORE INTO entities (name, token_hash, created_at) VALUES (?, ?, ?)",
        (key, key, created_at),
    )


def drop_index_key(conn: sqlite3.Connection, key: str) -> None:
    """Remove an index key's row, in the caller's transaction."""
    conn.execute("DELETE FROM entities WHERE name = ?", (key,))
