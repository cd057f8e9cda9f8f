"""Where the agent hosts' hooks are in each session (table hook_sessions): one JSON state
per entity, host and key (a session id, a Letta working folder, the Letta agent served).

The hook route (pps.rest.hooks) reads the states a call needs, decides from them what to
store (ingest.claude_code and its siblings), and writes back those it changed, in the
events' own transaction (one commit), or alone when it stored no new event. A call sent again
derives the same uids from them: nothing is stored twice.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from engine.kernel import timestamps
from engine.store.db import Database


class HookSessions:
    """The states of one entity's hooks of one host."""

    def __init__(self, db: Database, entity: str, host: str):
        self.db, self.entity, self.host = db, entity, host

    def read(self, key: str) -> dict[str, Any]:
        """The state under `key` ({} for a new one), as stored."""
        row = self.db.conn.execute(
            "SELECT state FROM hook_sessions WHERE entity = ? AND host = ? AND key = ?",
            (self.entity, self.host, key),
        ).fetchone()
        return dict(json.loads(row[0])) if row else {}

    def save(
        self, states: dict[str, dict[str, Any]], conn: sqlite3.Connection | None = None
    ) -> None:
        """Write `states` (key -> state): in the transaction of `conn` (the call's events'
        own, one commit for both), else in one of its own."""
        if conn is None:
            with self.db.write() as own:
                return self.save(states, own)
        now = timestamps.now()
        conn.executemany(
            "INSERT INTO hook_sessions (entity, host, key, state, updated_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (entity, host, key)"
            " DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
            [
                (self.entity, self.host, key, json.dumps(state, ensure_ascii=False), now)
                for key, state in states.items()
            ],
        )
