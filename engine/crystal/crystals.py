"""Layer 4, crystals: chained identity snapshots, kept as markdown in the entity's home.

`crystals/crystal_NNN.md`, numbered in order; each names the ones before it on its
chain line. The newest `keep` (8) are current; older ones move to `crystals/archive/`.
Nothing is deleted, except that `delete_latest` takes back the newest one (and the
newest archived crystal returns to the current window). The files are the truth: there
is no table to drift from them.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from engine.kernel.errors import InputError, NotFound
from engine.kernel.files import ensure_private_dir, write_private
from engine.kernel.requests import NON_BLANK, Request, is_blank

_NAME = re.compile(r"^crystal_(\d{3,})\.md$")
CHAIN_LENGTH = 4  # the chain line names this crystal and the three before it
MAX_BYTES = 256 * 1024


class Crystal(BaseModel):
    number: int
    path: str  # relative to the entity's home
    archived: bool
    content: str
    modified_at: str


class Crystals(BaseModel):
    crystals: list[Crystal]


class CrystalIn(Request):
    content: str = Field(
        min_length=1, description="The snapshot, markdown.", json_schema_extra=NON_BLANK
    )


class CurrentQuery(Request):
    count: int = Field(4, ge=1, le=100)


def crystallize(home: Path, crystal: CrystalIn, keep: int = 8) -> Crystal:
    """Write the next crystal, linked to the previous ones; archive past `keep`."""
    content = crystal.content
    if is_blank(content):
        raise InputError.of("content", "must not be empty")
    if len(content.encode()) > MAX_BYTES:
        raise InputError.of("content", f"over {MAX_BYTES} bytes")
    with _locked(home) as folder:
        number = max((n for n, _ in _files(folder)), default=0) + 1
        chain = " → ".join(f"#{n}" for n in range(max(1, number - CHAIN_LENGTH + 1), number + 1))
        today = datetime.now(UTC).date().isoformat()
        text = f"# Crystal #{number} ({today})\n[Chain: {chain}]\n\n{content.strip()}\n"
        path = folder / f"crystal_{number:03d}.md"
        _write_private(path, text)
        _rebalance(folder, keep)
    return _read(home, folder / path.name)


def current(home: Path, ask: CurrentQuery) -> Crystals:
    """The newest `count` current crystals, oldest first (reading order)."""
    folder = home / "crystals"
    newest = [path for _, path in _files(folder) if path.parent == folder][-ask.count :]
    return Crystals(crystals=[_read(home, path) for path in newest])


def list_all(home: Path) -> Crystals:
    """Every crystal, archived ones included, oldest first."""
    return Crystals(crystals=[_read(home, path) for _, path in _files(home / "crystals")])


def delete_latest(home: Path, keep: int = 8) -> Crystal:
    """Take back the newest crystal (only that one can be deleted)."""
    with _locked(home) as folder:
        files = _files(folder)
        if not files:
            raise NotFound("there are no crystals")
        _, latest = files[-1]
        removed = _read(home, latest)
        latest.unlink()
        _rebalance(folder, keep)
    return removed


def _rebalance(folder: Path, keep: int) -> None:
    """Keep exactly the newest `keep` crystals current; the rest archived."""
    archive = ensure_private_dir(folder / "archive")
    files = _files(folder)
    for index, (_, path) in enumerate(files):
        target = folder if index >= len(files) - keep else archive
        if path.parent != target:
            path.rename(target / path.name)


def _files(folder: Path) -> list[tuple[int, Path]]:
    found = []
    for place in (folder, folder / "archive"):
        if place.is_dir():
            for path in place.iterdir():
                match = _NAME.match(path.name)
                if match and path.is_file():
                    found.append((int(match[1]), path))
    return sorted(found)


def _read(home: Path, path: Path) -> Crystal:
    stamp = datetime.fromtimestamp(path.stat().st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    named = _NAME.match(path.name)
    assert named is not None  # every path read is one `_files` matched or named so
    return Crystal(
        number=int(named[1]),
        path=str(path.relative_to(home)),
        archived=path.parent.name == "archive",
        content=path.read_text(encoding="utf-8"),
        modified_at=stamp,
    )


def _write_private(path: Path, text: str) -> None:
    """Complete before it appears under its name."""
    partial = path.with_suffix(".md.partial")
    partial.unlink(missing_ok=True)  # left by a crash
    write_private(partial, text)
    partial.rename(path)


@contextmanager
def _locked(home: Path) -> Iterator[Path]:
    """One writer at a time per entity, across processes."""
    folder = ensure_private_dir(home / "crystals")
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield folder
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
