"""Signed-in browsers: a random session id in a cookie, the session itself kept here.

The store is in memory: a restart of `pps serve` signs everyone out, and signing out
deletes the session at once, so a copied cookie is worth nothing after either. A session
ends after IDLE_S without a request and MAX_S after sign-in, whichever comes first, and
when the entity's token is rotated (`pps entity rotate`, revoke on the Clients page). It
holds the entity's name, when the token it was started with was issued, and a CSRF token;
never the entity's token.

`SignIns` slows down guessing: each wrong token from a client doubles the time before
its next sign-in is looked at (docs/ui.md, "Signing in").
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from engine.kernel import backoff

IDLE_S = 2 * 3600
MAX_S = 12 * 3600
MAX_SESSIONS = 1000
"""Past this many open sessions, the oldest is ended to make room for a new sign-in."""


@dataclass
class Session:
    id: str
    entity: str
    issued: str
    """When the token signed in with was issued (entities.Holder.issued)."""
    csrf: str
    started: float
    seen: float


class Sessions:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._open: dict[str, Session] = {}
        self._lock = threading.Lock()

    def start(self, entity: str, issued: str) -> Session:
        now = self._clock()
        session = Session(
            id=secrets.token_urlsafe(32),
            entity=entity,
            issued=issued,
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


FIRST_DELAY_S = 1
MAX_DELAY_S = 60
FORGET_S = 15 * 60
"""A client's failed sign-ins are forgotten this long after its last one."""
MAX_CLIENTS = 10_000
"""Past this many clients with failures, the one idle longest is forgotten."""


@dataclass
class _Failures:
    count: int
    last: float
    until: float


class SignIns:
    """The sign-in throttle, per client address. After a client's nth wrong token in a
    row, its next sign-in is looked at only 2**(n-1) s later (1, 2, 4, ... at most
    MAX_DELAY_S); `wait_s` says how long is left. Nothing sleeps: a sign-in inside the
    window is refused at once (429 with Retry-After, the page says so) without its
    token being looked at, and it neither counts as a failure nor moves the window, so
    hammering does not lengthen the wait: a guesser gets one try per MAX_DELAY_S at
    most, and there is no lockout. A success forgets the client's failures."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._failures: dict[str, _Failures] = {}
        self._lock = threading.Lock()

    def wait_s(self, client: str) -> int:
        """Whole seconds this client must still wait before a sign-in is tried (0: none)."""
        now = self._clock()
        with self._lock:
            failures = self._failures.get(client)
            if failures is None or now >= failures.until:
                return 0
            return max(1, math.ceil(failures.until - now))

    def failed(self, client: str) -> tuple[int, int]:
        """Record a wrong token from this client: (failures in a row, seconds it waits)."""
        now = self._clock()
        with self._lock:
            failures = self._failures.get(client)
            if failures is None or now - failures.last > FORGET_S:
                failures = _Failures(count=0, last=now, until=now)
            failures.count += 1
            delay = math.ceil(backoff.delay(failures.count, FIRST_DELAY_S, MAX_DELAY_S))
            failures.last, failures.until = now, now + delay
            self._failures.pop(client, None)
            self._failures[client] = failures  # the newest last: the oldest is first
            while len(self._failures) > MAX_CLIENTS:
                del self._failures[next(iter(self._failures))]
            return failures.count, delay

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._failures.pop(client, None)
