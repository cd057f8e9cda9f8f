"""One owner per data dir: an exclusive lock (flock) on `<data dir>/pps.lock`.

`pps serve` holds it for as long as it runs, and so does a command that runs a server's
parts itself (`pps replay graph` and `pps doctor` when no server runs: they start the
embedded FalkorDB). A second one fails at once with `DataDirBusy`, which names the first
(command, pid, port). The file holds the owner's description as JSON; the lock itself is
the kernel's, dropped when the owning process exits however it exits, so a file left
behind by a killed server locks nothing.

A flock belongs to one open file, not to a process: an owner that hands its data dir to
code in the same process passes the `DataDirLock` along (`pps.app.create_app(lock=...)`);
taking it again, even in the same process, fails.

Plain standard library: `pps serve` takes it before loading the engine.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

LOCK_FILE = "pps.lock"
SERVE = "pps serve"


@dataclass(frozen=True)
class Owner:
    """Who holds a data dir: the command, its pid, and for a server where it listens."""

    command: str
    pid: int | None = None
    host: str | None = None
    port: int | None = None
    key: str | None = field(default=None, repr=False)
    """A server's local key, made at its start: whoever can read this file (0600, in the
    0700 data dir) may act as the operator on that server (GET /v1/operator/check)."""

    @property
    def url(self) -> str | None:
        if self.port is None:
            return None
        host = self.host or "127.0.0.1"
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    def __str__(self) -> str:
        details = [f"pid {self.pid}" if self.pid else "pid unknown"]
        if self.port is not None:
            details.append(f"port {self.port}")
        return f"{self.command} ({', '.join(details)})"


class DataDirBusy(RuntimeError):
    """Another process holds the data dir."""

    def __init__(self, data_dir: Path, owner: Owner):
        self.data_dir = data_dir
        self.owner = owner
        super().__init__(f"{data_dir} is in use by {owner}")


class DataDirLock:
    """The held lock of one data dir; `release()` (or leaving the `with`) lets it go."""

    def __init__(self, data_dir: Path, fd: int, owner: Owner):
        self.data_dir = data_dir
        self.owner = owner
        self._fd: int | None = fd

    @classmethod
    def acquire(
        cls, data_dir: Path, command: str, *, host: str | None = None, port: int | None = None
    ) -> DataDirLock:
        """Take the data dir (created 0700 if missing) or raise DataDirBusy naming its
        owner."""
        data_dir = Path(data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        data_dir.chmod(0o700)
        fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            _take(fd, data_dir)
        except BaseException:
            os.close(fd)
            raise
        key = None if port is None else secrets.token_urlsafe(32)  # a server's
        owner = Owner(command=command, pid=os.getpid(), host=host, port=port, key=key)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(owner.__dict__).encode(), 0)
        return cls(data_dir, fd, owner)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # nobody is described as holding it any more
        os.close(fd)  # closing drops the flock

    def __enter__(self) -> DataDirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def owner(data_dir: Path) -> Owner | None:
    """Who holds the data dir now, or None when nobody does (or it does not exist)."""
    try:
        fd = os.open(Path(data_dir) / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _described(fd) or Owner(command="another process")
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _take(fd: int, data_dir: Path) -> None:
    # `owner()` holds a shared lock for an instant to look; a lock that is held with no
    # owner described is such a look (or an owner still writing its description).
    deadline = time.monotonic() + 2.0
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            described = _described(fd)
            if described is not None or time.monotonic() > deadline:
                raise DataDirBusy(data_dir, described or Owner("another process")) from None
            time.sleep(0.01)


def _described(fd: int) -> Owner | None:
    try:
        raw = os.pread(fd, 4096, 0)
        fields = json.loads(raw) if raw.strip() else None
        return Owner(**fields) if isinstance(fields, dict) else None
    except (OSError, ValueError, TypeError):
        return None
