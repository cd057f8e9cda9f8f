"""`pps export`: one entity of a data dir written as an export (portable says what one
holds).

Keys come in a fixed order and nothing in it says when it was made, so exporting data
that did not change writes the same bytes, and `git diff` over a re-export shows only
what changed. An export is read in one SQLite read transaction (the server keeps
writing meanwhile) and written line by line: memory stays flat however long the log.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.backup import scope
from engine.backup.portable import (
    EVENTS,
    FORMAT,
    HOME,
    INVENTORY,
    MANIFEST,
    SUMMARIES,
    ExportError,
    copy_file,
)
from engine.kernel.config import Settings
from engine.kernel.files import ensure_private_dir
from engine.store.db import Database

# Every table whose rows an `entity` column marks: the export file that carries it, or
# why it is not exported. A new table must be placed here before an export runs.
CARRIED = {
    "events": EVENTS,
    "summaries": SUMMARIES,
    "spaces": INVENTORY,
    "inventory_items": INVENTORY,
    "current_spaces": INVENTORY,
}
NOT_EXPORTED = {
    "search_files": "the search index: the import rebuilds it from the events and the home",
    "search_chunks": "the search index: the import rebuilds it from the events and the home",
    "search_vectors": "the search index: the import rebuilds it from the events and the home",
    "search_generations": "the search index's bookkeeping",
    "jobs": "the queue: the import queues its own work",
    "queue_pauses": "the queue",
    "episodes": "the graph's episodes: derived from the events (`pps replay graph`)",
    "graph_pending": "the graph: derived from the events (`pps replay graph`)",
    "graph_usage": "the graph's LLM spending on this service",
    "graph_replays": "the graph: derived from the events (`pps replay graph`)",
    "graph_vectors": "the model of the graph's vectors: derived with the graph",
    "recall_log": "this service's log of recalls",
    "audit_judgments": "judgments of this service's logged recalls (`pps audit export`)",
    "recall_used": "what replies used of this service's logged recalls",
    "recall_held": "what this service's recalls gave each session (hashes, a week)",
    "shared_members": "shared stores belong to several entities: not one entity's to export",
    "backups": "this data dir's backup history",
}
GRAPH_NOTE = (
    "The graph is not exported: it is derived from the events. After an import,"
    " `pps replay graph` rebuilds it (with an LLM configured)."
)


@dataclass
class Exported:
    folder: Path
    manifest: dict
    rewritten: bool


def export(settings: Settings, entity: str, out: Path, version: str = "unknown") -> Exported:
    """Write the entity's export into `out`: a missing or empty folder, or an earlier
    export of the same entity (rewritten: what this one does not hold is removed there;
    files that are not the export's, `.git` say, are left alone)."""
    out = Path(out).absolute()
    rewritten = _check_out(out, entity)
    if not settings.database_path.is_file():
        raise ExportError(f"no database at {settings.database_path}: nothing to export")
    db = Database.open(settings)
    try:
        with db.snapshot() as conn:
            if not conn.execute("SELECT 1 FROM entities WHERE name = ?", (entity,)).fetchone():
                raise ExportError(f"no entity named {entity!r}")
            _check_tables(conn)
            ensure_private_dir(out)
            counts = {
                "events": _write_lines(out / EVENTS, _event_lines(conn, entity)),
                "summaries": _write_lines(out / SUMMARIES, _summary_lines(conn, entity)),
            }
            inventory = _Counter(_inventory_lines(conn, entity))
            _write_lines(out / INVENTORY, inventory)
            counts.update(inventory.kinds)
            schema = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
            schema_version = schema.fetchone()[0]
    finally:
        db.close()
    skipped: list[str] = []
    counts["home_files"] = _copy_home(settings, entity, out / HOME, skipped)
    manifest = {
        "format": FORMAT,
        "entity": entity,
        "pps_version": version,
        "schema_version": schema_version,
        "counts": {name: counts.get(name, 0) for name in _COUNTS},
        "files": {
            EVENTS: "one event a line, in the order stored (oldest first), every field;"
            " forgotten events are left out",
            SUMMARIES: "one summary a line; start_uid and end_uid name its range's ends",
            INVENTORY: "kind space, then item, then current_space (where the entity is)",
            HOME: "the home's files as they are (word-photos, fragments, memory, crystals)",
        },
        "not_exported": dict(sorted(NOT_EXPORTED.items())),
        "graph": GRAPH_NOTE,
        "skipped": skipped,
    }
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    _write_lines(out / MANIFEST, iter([text.rstrip("\n")]))
    return Exported(out, manifest, rewritten)


_COUNTS = ("events", "summaries", "spaces", "items", "current_spaces", "home_files")


def _check_out(out: Path, entity: str) -> bool:
    """Whether `out` holds an earlier export of this entity (to be rewritten); refuse
    anything else that is not a missing or empty folder."""
    if not out.exists():
        if not out.parent.is_dir():
            raise ExportError(f"{out.parent} is not a folder")
        return False
    if not out.is_dir():
        raise ExportError(f"{out} is not a folder")
    if not any(out.iterdir()):
        return False
    try:
        found = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        found = None
    if isinstance(found, dict) and found.get("format") == FORMAT:
        if found.get("entity") == entity:
            return True
        raise ExportError(
            f"{out} holds the export of {found.get('entity')!r}, not of {entity!r}: name"
            " another folder"
        )
    raise ExportError(
        f"{out} is not empty and holds no export of {entity!r}: an export writes into an"
        " empty folder, or over its own earlier export"
    )


def _check_tables(conn) -> None:
    for name, marked in scope.tables(conn):
        if marked and name not in CARRIED and name not in NOT_EXPORTED:
            raise ExportError(
                f"table {name!r} holds an entity's rows and engine/backup/exporting.py does"
                " not say whether an export carries it: no export until it does"
            )


def _dumps(value: dict) -> str:
    return json.dumps(value, ensure_ascii=False)


def _event_lines(conn, entity: str) -> Iterator[str]:
    rows = conn.execute(
        "SELECT event_uid, created_at, received_at, channel, event_type, session_id, author,"
        " role, content, metadata FROM events WHERE entity = ?"
        " AND json_extract(metadata, '$.forgotten') IS NULL ORDER BY id",
        (entity,),
    )
    for row in rows:
        line = dict(row)
        line["metadata"] = _sorted(json.loads(line["metadata"]))
        yield _dumps(line)


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def _summary_lines(conn, entity: str) -> Iterator[str]:
    rows = conn.execute(
        "SELECT s.summary_type, s.channels, a.event_uid AS start_uid, b.event_uid AS end_uid,"
        " s.event_count, s.first_at, s.last_at, s.created_at, s.summary_text"
        " FROM summaries s JOIN events a ON a.id = s.start_id JOIN events b ON b.id = s.end_id"
        " WHERE s.entity = ? ORDER BY s.id",
        (entity,),
    )
    for row in rows:
        line = dict(row)
        line["channels"] = json.loads(line["channels"]) if line["channels"] else None
        yield _dumps(line)


def _inventory_lines(conn, entity: str) -> Iterator[str]:
    for row in conn.execute(
        "SELECT name, channel, created_at, updated_at, description FROM spaces"
        " WHERE entity = ? ORDER BY name",
        (entity,),
    ):
        yield _dumps({"kind": "space", **dict(row)})
    for row in conn.execute(
        "SELECT i.category, i.subcategory, i.name, s.name AS space, i.created_at,"
        " i.updated_at, i.attributes, i.description FROM inventory_items i"
        " LEFT JOIN spaces s ON s.id = i.space_id WHERE i.entity = ?"
        " ORDER BY i.category, i.name",
        (entity,),
    ):
        line = {"kind": "item", **dict(row)}
        line["attributes"] = _sorted(json.loads(line["attributes"]))
        yield _dumps(line)
    for row in conn.execute(
        "SELECT c.channel, s.name AS space, c.entered_at FROM current_spaces c"
        " JOIN spaces s ON s.id = c.space_id WHERE c.entity = ? ORDER BY c.channel",
        (entity,),
    ):
        yield _dumps({"kind": "current_space", **dict(row)})


class _Counter:
    """Inventory lines passed through, counted by kind."""

    def __init__(self, lines: Iterator[str]):
        self._names = {"space": "spaces", "item": "items", "current_space": "current_spaces"}
        self._lines = lines
        self.kinds: dict[str, int] = {}

    def __iter__(self) -> Iterator[str]:
        for line in self._lines:
            kind = self._names[json.loads(line)["kind"]]
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
            yield line


def _write_lines(path: Path, lines) -> int:
    """Write the lines to a 0600 temporary file beside `path`, then put it in its place."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    count = 0
    fd = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            for line in lines:
                handle.write(line)
                handle.write("\n")
                count += 1
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return count


def _copy_home(settings: Settings, entity: str, target: Path, skipped: list[str]) -> int:
    """Copy the home's files into `target` (a file already there with the same bytes is
    left as it is), then remove what the home no longer has."""
    root, _, tops = scope.home_of(settings, entity)
    ensure_private_dir(target)
    kept: set[str] = set()
    for relative, path in scope.files(root, tops, skipped, entity):
        destination = target / relative
        kept.add(relative)
        if destination.is_dir() and not destination.is_symlink():
            shutil.rmtree(destination)
        elif destination.is_file() and filecmp.cmp(path, destination, shallow=False):
            continue
        copy_file(path, destination)
    for directory, _, names in os.walk(target, topdown=False):
        for name in names:
            path = Path(directory) / name
            if path.relative_to(target).as_posix() not in kept:
                path.unlink()
        if Path(directory) != target and not any(Path(directory).iterdir()):
            Path(directory).rmdir()
    return len(kept)


# Asked by clients: the record of who called is this service's, as the recall log is.
NOT_EXPORTED.update(
    {
        "clients": "this service's record of who called",
        "client_calls": "this service's record of who called",
        "hook_sessions": "where this service's hooks are in each session (a hook client"
        " sends a transcript again from where the service has it)",
    }
)

# Asked by forgetting: what was forgotten is not exported, nor are its tombstones.
NOT_EXPORTED["forgotten"] = "this service's tombstones: an export leaves forgotten events out"
