"""Who called: the record of each client an entity's token was used by, with its last
call, its counts of reads and writes, and a bounded log of its recent calls (route, read
or write, status, latency; never content). The Clients page and GET /v1/clients show it,
and `pps hooks status` asks it whether a hook's last call reached the service.

A request only hands its call to `Recorder.record` (a list append under a lock); a
thread of the recorder writes what came in, batched, in one transaction, so a hook never
waits on this write. Reading flushes first, so what was answered is what is shown.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from engine.kernel import timestamps
from engine.store.db import Database

log = logging.getLogger("pps.clients")

RECENT_KEPT = 200
"""Calls kept in the log for each entity (older ones are pruned as new ones come)."""
CLIENTS_KEPT = 32
"""Clients kept for each entity; calls of labels past that count under OTHER."""
OTHER = "other"
BATCH_WINDOW_S = 0.2
"""How long the recorder lets calls gather before one write takes them all."""


@dataclass(frozen=True)
class Call:
    entity: str
    client: str
    method: str
    route: str
    kind: str  # "read" or "write"
    status: int
    latency_ms: float
    at: str = ""


@dataclass(frozen=True)
class ClientRecord:
    client: str
    first_at: str
    last_at: str
    last_status: int
    reads: int
    writes: int


class Recorder:
    """Takes calls as they are answered and writes them from a thread of its own."""

    def __init__(self, db: Database):
        self.db = db
        self._pending: list[Call] = []
        self._lock = threading.Lock()
        self._writing = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="pps-clients", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self.flush()

    def record(self, call: Call) -> None:
        if not call.at:
            call = Call(**{**call.__dict__, "at": timestamps.now()})
        with self._lock:
            self._pending.append(call)
        self._wake.set()

    def flush(self) -> None:
        """Write every call taken so far (a failing write drops them, counted in /health)."""
        with self._writing:
            with self._lock:
                calls, self._pending = self._pending, []
            if calls:
                with self.db.dropping("client record"):
                    _write(self.db, calls)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait()
            self._wake.clear()
            self._stopping.wait(BATCH_WINDOW_S)
            try:
                self.flush()
            except Exception:  # the record must never stop the recorder
                log.exception("the client record could not be written")

    # What the faces read, flushed first.

    def clients(self, entity: str) -> list[ClientRecord]:
        """The entity's clients, the last to call first."""
        self.flush()
        rows = self.db.conn.execute(
            "SELECT client, first_at, last_at, last_status, reads, writes FROM clients"
            " WHERE entity = ? ORDER BY last_at DESC, client",
            (entity,),
        )
        return [ClientRecord(**row) for row in rows]

    def recent(self, entity: str, limit: int = 50) -> list[Call]:
        """The entity's most recent calls, newest first."""
        self.flush()
        rows = self.db.conn.execute(
            "SELECT entity, client, method, route, kind, status, latency_ms, at"
            " FROM client_calls WHERE entity = ? ORDER BY id DESC LIMIT ?",
            (entity, limit),
        )
        return [Call(**row) for row in rows]


def _write(db: Database, calls: list[Call]) -> None:
    with db.write() as conn:
        for entity in {c.entity for c in calls}:
            known = {
                r[0] for r in conn.execute("SELECT client FROM clients WHERE entity = ?", (entity,))
            }
            for call in (c for c in calls if c.entity == entity):
                client = call.client
                if client not in known:
                    if len(known) >= CLIENTS_KEPT:
                        client = OTHER
                    known.add(client)
                reads, writes = (1, 0) if call.kind == "read" else (0, 1)
                conn.execute(
                    "INSERT INTO clients (entity, client, first_at, last_at, last_status,"
                    " reads, writes) VALUES (?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (entity, client) DO UPDATE SET last_at = excluded.last_at,"
                    " last_status = excluded.last_status, reads = reads + excluded.reads,"
                    " writes = writes + excluded.writes",
                    (entity, client, call.at, call.at, call.status, reads, writes),
                )
                conn.execute(
                    "INSERT INTO client_calls (entity, client, at, method, route, kind, status,"
                    " latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        entity,
                        client,
                        call.at,
                        call.method,
                        call.route[:200],
                        call.kind,
                        call.status,
                        call.latency_ms,
                    ),
                )
            conn.execute(
                "DELETE FROM client_calls WHERE entity = ? AND id <= (SELECT id FROM"
                " client_calls WHERE entity = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (entity, entity, RECENT_KEPT),
            )
