"""A task run every few seconds in a thread of its own, for the background upkeep a
running server does (closing graph episodes, queueing summaries)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("pps.ticker")


class Ticker:
    """Runs `tick` every `interval` seconds until stopped. A tick that raises is logged
    and the next one runs: the thread never ends quietly."""

    def __init__(self, name: str, interval: float, tick: Callable[[], object]):
        self.name, self.interval, self.tick = name, interval, tick
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

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.tick()
            except Exception:  # the next tick retries
                log.exception("%s failed", self.name)
