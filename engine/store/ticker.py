"""A task run every few seconds in a thread of its own, for the background upkeep a
running server does (closing graph episodes, queueing summaries), and the state such a
loop keeps while what it does keeps failing (a full disk, say): its log lines and its
backoff (engine.kernel.backoff)."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable

from engine.kernel import backoff
from engine.kernel.errors import Unavailable

log = logging.getLogger("pps.ticker")

BACKOFF_CAP_S = 60.0
"""The longest a failing loop waits between tries (unless its interval is longer)."""


class FailingLoop:
    """The state of a loop whose step can fail: one line in the log when it starts failing
    and one when it recovers (never one per try), and the wait before its next try,
    `interval` doubled by each failure in a row up to `cap`, back to `interval` once a
    step works."""

    def __init__(
        self,
        name: str,
        interval: float,
        cap: float = BACKOFF_CAP_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.name, self.interval, self.cap = name, interval, max(cap, interval)
        self.delay = interval
        """The wait before the next try."""
        self.failures = 0
        """Failures in a row."""
        self.failing_since: float | None = None
        self._clock = clock

    def failed(self, exc: BaseException) -> float:
        """Count a failure; return the wait before the next try. An error the database
        or a part gives for its state (full, locked, down) is logged as one line; any other
        with its traceback, once."""
        if self.failing_since is None:
            self.failing_since = self._clock()
            expected = isinstance(exc, Unavailable | sqlite3.Error | OSError)
            why = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            log.warning("%s failing: %s", self.name, why, exc_info=None if expected else exc)
        self.failures += 1
        self.delay = backoff.delay(self.failures, 2 * self.interval, self.cap)
        return self.delay

    def worked(self) -> float:
        """Count a step that worked; return the wait before the next one."""
        if self.failing_since is not None:
            took = self._clock() - self.failing_since
            log.info("%s recovered after %.0f s", self.name, took)
            self.failing_since = None
        self.failures = 0
        self.delay = self.interval
        return self.delay


class Ticker:
    """Runs `tick` every `interval` seconds until stopped. A tick that raises is tried
    again, less often while it keeps failing (`FailingLoop`): the thread never ends
    quietly, and never fills the log."""

    def __init__(
        self,
        name: str,
        interval: float,
        tick: Callable[[], object],
        clock: Callable[[], float] = time.monotonic,
    ):
        self.name, self.interval, self.tick = name, interval, tick
        self.failing = FailingLoop(name, interval, clock=clock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def step(self) -> float:
        """Run one tick; return the seconds to wait before the next."""
        try:
            self.tick()
        except Exception as exc:  # the next tick retries
            return self.failing.failed(exc)
        return self.failing.worked()

    def _run(self) -> None:
        delay = self.interval
        while not self._stop.wait(delay):
            delay = self.step()
