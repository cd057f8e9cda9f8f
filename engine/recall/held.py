"""What a session holds already: the items earlier recalls of the same session injected
(table recall_held). An ambient recall that names its session leaves them out (its host
has them in its context, as it has the session's own turns), so a word-photo a session
woke up with is not injected again with the next prompt, and the other channels' news is
given once. A startup recall is a clean context: it starts the session's list again.

An item is the same memory by its source (engine.recall.audit `item_key`); an excerpt of
a file the session holds whole is held too. Kept as hashes, never a text or a name, for
HELD_DAYS after the session's last recall (let go at the entity's next startup recall);
on a full disk nothing is remembered and the recall still answers.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from engine.kernel import timestamps
from engine.recall.audit import item_key
from engine.recall.shapes import Item
from engine.store.db import Database

HELD_DAYS = 7


def leave_out(db: Database, entity: str, session: str, items: list[Item]) -> list[Item]:
    """The items the session does not hold yet, in order."""
    held = {
        row[0]
        for row in db.conn.execute(
            "SELECT key FROM recall_held WHERE entity = ? AND session_id = ?", (entity, session)
        )
    }
    if not held:
        return items
    return [item for item in items if not held & set(_keys(entity, item))]


def remember(
    db: Database, entity: str, session: str, items: list[Item], *, again: bool = False
) -> None:
    """The session now holds these items too (`again`: only these, a clean context; the
    entity's sessions past HELD_DAYS are let go then, at a session's start, not on every
    prompt)."""
    now = datetime.now(UTC)
    at = timestamps.from_datetime(now)
    keys = {_keys(entity, item)[0] for item in items}
    with db.dropping("recall_held"), db.write() as conn:
        if again:
            stale = timestamps.from_datetime(now - timedelta(days=HELD_DAYS))
            conn.execute(
                "DELETE FROM recall_held WHERE entity = ? AND (session_id = ? OR session_id IN"
                " (SELECT session_id FROM recall_held WHERE entity = ? GROUP BY session_id"
                " HAVING MAX(at) < ?))",
                (entity, session, entity, stale),
            )
        conn.executemany(
            "INSERT INTO recall_held (entity, session_id, key, at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT DO UPDATE SET at = excluded.at",
            [(entity, session, key, at) for key in keys],
        )


def _keys(entity: str, item: Item) -> list[str]:
    """The item's own key first, then the whole file's for an excerpt."""
    keys = [item_key(item.source)]
    if item.source.get("path") and item.source.get("start_line"):
        keys.append(f"file:{item.source['path']}")
    return [hashlib.sha256(f"{entity}\n{key}".encode()).hexdigest()[:32] for key in keys]
