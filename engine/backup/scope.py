"""What belongs to one entity, as the backups (archive) and the exports (portable) both
need to know it: the files of its home they copy, and the tables whose rows are its."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from engine.kernel.config import Settings
from engine.search import homes


def home_of(settings: Settings, entity: str) -> tuple[Path, bool, list[str] | None]:
    """The entity's home, whether it is configured elsewhere, and which of its folders
    to copy (None: all of it). A home elsewhere (an agent's own notes, perhaps a git
    repository) gives only what pps reads and writes there."""
    configured = settings.entity_homes.get(entity)
    if configured is None:
        return homes.entities_dir(settings) / entity, False, None
    tops = [
        homes.MEMORY_FILE,
        homes.MEMORY_DIR,
        homes.WORD_PHOTOS,
        ".brain",
        "crystals",
        *settings.domain_collections,
        *settings.growth_collections,
    ]
    return Path(configured).expanduser(), True, tops


def files(
    root: Path, tops: list[str] | None, skipped: list[str], owner: str
) -> Iterator[tuple[str, Path]]:
    """Every regular file under `root` (or its `tops`), in a stable order, as
    ('/'-separated relative name, path). Symlinks are not followed; names that are not
    UTF-8 and our own half-written temporary files are left out (the first are listed)."""
    if not root.is_dir():
        return
    starts = [root] if tops is None else [root / top for top in dict.fromkeys(tops)]
    for start in starts:
        if start.is_file() and not start.is_symlink():
            yield start.relative_to(root).as_posix(), start
            continue
        if not start.is_dir() or start.is_symlink():
            continue
        for directory, dirs, names in os.walk(start):
            dirs[:] = sorted(d for d in dirs if not (Path(directory) / d).is_symlink())
            for name in sorted(names):
                path = Path(directory) / name
                relative = path.relative_to(root).as_posix()
                if path.is_symlink() or not path.is_file():
                    continue
                if name.startswith(".") and name.endswith(".tmp"):
                    continue
                if homes.name_problem(relative):
                    skipped.append(f"{owner}: {homes.shown(relative)} (name not UTF-8)")
                    continue
                yield relative, path


def tables(conn: sqlite3.Connection) -> list[tuple[str, bool]]:
    """Every table of the database that holds rows of its own, as (name, whether an
    `entity` column marks whose each row is). Full-text indexes and their storage are
    left out: they are rebuilt from the tables they index."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
    ).fetchall()
    virtual = [name for name, sql in rows if sql and sql.upper().startswith("CREATE VIRTUAL")]
    found = []
    for name, _ in rows:
        if name.startswith("sqlite_") or name in virtual:
            continue
        if any(name.startswith(f"{v}_") for v in virtual):
            continue  # a full-text index's own storage
        columns = {row[1] for row in conn.execute(f'PRAGMA table_info("{name}")')}
        found.append((name, "entity" in columns))
    return found


def virtual_tables(conn: sqlite3.Connection) -> list[str]:
    return [
        name
        for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
        )
        if sql and sql.upper().startswith("CREATE VIRTUAL")
    ]
