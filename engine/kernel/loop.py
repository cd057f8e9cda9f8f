"""The process's one event loop, for the async libraries the engine calls: Graphiti and
the graph drivers, the LLM SDKs' async clients. The engine itself is synchronous (its
workers and the server's routes are threads), and every coroutine it runs reaches the
loop through `run` (or a `Calls` of its owner), which hands it over and waits for its
answer in the calling thread.

One loop, on a daemon thread of its own (`pps-async`) made at the first call: an async
client is bound to the loop it first ran on, so it is only ever used from this one, and
no call pays for a loop of its own. A coroutine that raises reaches its caller as that
exception; one that stops the loop (SystemExit, KeyboardInterrupt) is logged and the loop
runs on, so that no other caller waits forever.

Standard library only: the kernel stands alone.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

log = logging.getLogger("pps.loop")

T = TypeVar("T")

THREAD = "pps-async"

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


class Closed(RuntimeError):
    """A `Calls` that is closed (its owner stopped, or has not started) refused a call."""


def run(coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
    """Run `coro` on the loop and return what it returns, or raise what it raises. Past
    `timeout` seconds (None: the coroutine bounds itself) it is cancelled and TimeoutError
    is raised; a caller interrupted while it waits cancels it too."""
    _refuse_own_thread(coro)
    return _wait(submit(coro), timeout)


def submit(coro: Coroutine[Any, Any, T]) -> Future[T]:
    """Start `coro` on the loop without waiting for it: its future answers what it returns
    or raises, and cancelling the future cancels it."""
    return asyncio.run_coroutine_threadsafe(coro, _running())


class Calls:
    """The coroutines one owner runs on the loop (a graph store's), cancelled together when
    it stops: a caller still waiting gets CancelledError at once, and a call while it is
    closed is refused with `Closed`. It starts closed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = False
        self._running: set[Future[Any]] = set()

    @property
    def open(self) -> bool:
        return self._open

    def start(self) -> None:
        with self._lock:
            self._open = True

    def stop(self) -> None:
        """Refuse new calls and cancel those still running."""
        with self._lock:
            self._open = False
            running, self._running = self._running, set()
        for future in running:
            future.cancel()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        """As the module's `run`, for this owner."""
        _refuse_own_thread(coro)
        with self._lock:  # a call cannot slip past a `stop` and go on running
            if not self._open:
                coro.close()
                raise Closed("stopped")
            future = submit(coro)
            self._running.add(future)
        try:
            return _wait(future, timeout)
        finally:
            with self._lock:
                self._running.discard(future)


def _wait(future: Future[T], timeout: float | None) -> T:
    try:
        return future.result(timeout)
    except BaseException:
        future.cancel()  # past its time, or the caller interrupted: nothing is left running
        raise


def _refuse_own_thread(coro: Coroutine[Any, Any, Any]) -> None:
    """Waiting on the loop from its own thread would wait forever."""
    if _thread is not None and threading.current_thread() is _thread:
        coro.close()
        raise RuntimeError("a coroutine on the loop waits for another: await it instead")


def _running() -> asyncio.AbstractEventLoop:
    """The loop, and its thread started on first use (again in a child made by fork,
    where the parent's thread does not run)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(target=_serve, args=(_loop,), name=THREAD, daemon=True)
            _thread.start()
        return _loop


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    while True:
        try:
            loop.run_forever()
            return  # stopped on purpose (nothing here stops it)
        except BaseException:  # a coroutine raised SystemExit or KeyboardInterrupt
            log.exception("a coroutine stopped the event loop: it runs on")
