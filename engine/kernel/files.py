"""Private files and folders: everything pps writes is the entity's or the operator's
alone (folders 0700, files 0600), for the server and the clients alike."""

from __future__ import annotations

import errno
import os
import stat
from contextlib import suppress
from pathlib import Path

from engine.kernel.errors import Unavailable


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) and make it 0700. A folder already 0700 is left alone:
    a chmod is a change, and the file watcher would see one each time a home is used."""
    path.mkdir(parents=True, exist_ok=True)
    _private(path, 0o700)
    return path


def ensure_private_file(path: Path) -> Path:
    """Create `path` empty if missing, 0600 either way. A file that exists is never opened
    here: closing any descriptor of a SQLite file drops every lock this process holds on
    it (POSIX advisory locks), which would let another process checkpoint and remove the
    WAL under a live connection."""
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    _private(path, 0o600)
    return path


def write_private(path: Path, text: str) -> None:
    """Create `path` (refusing an existing one) 0600, write `text`, and flush it to disk.
    A disk without room for it raises Unavailable("disk") and leaves no file behind."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        path.unlink(missing_ok=True)
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise Unavailable(
            "disk",
            f"the disk is full ({exc.strerror}): nothing was written; try again once there"
            " is space",
        ) from exc


def _private(path: Path, mode: int) -> None:
    if stat.S_IMODE(path.stat().st_mode) != mode:
        path.chmod(mode)
