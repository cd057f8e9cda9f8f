"""Signed-in browsers: a random session id in a cookie, the session itself kept here.

The store is in memory: a restart of `pps serve` signs everyone out, and signing out
deletes the session at once, so a copied cookie is worth nothing after either. A session
ends after IDLE_S without a request and MAX_S after sign-in, whichever comes first. It
holds the entity's name and a CSRF token, never the entity's token.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

IDLE_S = 2 * 3600
MAX_S = 12 * 3600
MAX_SESSIONS = 1000
"""Past this many open sessions, the oldest is ended to make room for a new sign-in."""


@dataclass
class Session:
    id: str
    entity: str
    csrf: str
    started: float
    seen: float


class Sessions:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._open: dict[str, Session] = {}
        self._lock = threading.Lock()

    def start(self, entity: str) -> Session:
        now = self._clock()
        session = Session(
            id=secrets.token_urlsafe(32),
            entity=entity,
            csrf=secrets.token_urlsafe(32),
            started=now,
            seen=now,
        )
        with self._lock:
            self._expire(now)
            while len(self._open) >= MAX_SESSIONS:
                oldest = min(self._open.values(), key=lambda s: s.started)
                del self._open[oldest.id]
            self._open[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The open session with this id, its idle time reset; None if there is none (never
        was, signed out, expired)."""
        if not session_id:
            return None
        now = self._clock()
        with self._lock:
            session = self._open.get(session_id)
            if session is None:
                return None
            if now - session.seen > IDLE_S or now - session.started > MAX_S:
                del self._open[session_id]
                return None
            session.seen = now
            return session

    def end(self, session_id: str) -> None:
        with self._lock:
            self._open.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._open)

    def _expire(self, now: float) -> None:
        for session in list(self._open.values()):
            if now - session.seen > IDLE_S or now - session.started > MAX_S:
                del self._open[session.id]
