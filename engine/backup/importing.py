"""`pps import export`: an export (portable says what one holds) taken into this data
dir, under its own entity's name or another.

An import first reads the whole export and checks every line, every reference and every
home file against the target (nothing is written if one is wrong), then stores: events
through capture (`Capture.record`, with the runtime's listeners: search rows
at once, their context and vectors as queued jobs), so an event_uid already there stores
nothing; summaries and inventory the same way (an identical summary, an item or a space
no newer than the one there, are left alone); home files copied, an identical one left
alone and a different one refused. Then the home is indexed. Derived data (the search
index, the graph, the queue) is rebuilt, never copied.
"""

from __future__ import annotations

import filecmp
import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from engine.backup import portable, scope
from engine.backup.portable import ExportError, copy_file
from engine.capture import events as capture
from engine.capture.entities import check_name
from engine.capture.events import Capture
from engine.crystal.summaries import SUMMARY_TYPE_PATTERN
from engine.inventory.items import ItemIn, SpaceIn
from engine.kernel import lock, timestamps
from engine.kernel.config import Settings
from engine.kernel.errors import InputError, from_validation
from engine.kernel.events import EventIn
from engine.kernel.files import ensure_private_dir
from engine.kernel.patterns import CHANNEL_PATTERN
from engine.kernel.requests import Request
from engine.store.db import MIGRATIONS_DIR, Database, migrations

_BATCH = 500


class SummaryLine(Request):
    summary_type: str = Field(pattern=SUMMARY_TYPE_PATTERN)
    channels: list[str] | None = None
    start_uid: str
    end_uid: str
    event_count: int = Field(ge=0)
    first_at: str | None = None
    last_at: str | None = None
    created_at: str
    summary_text: str = Field(min_length=1)


class SpaceLine(SpaceIn):
    kind: str
    created_at: str
    updated_at: str


class ItemLine(ItemIn):
    kind: str
    created_at: str
    updated_at: str


class CurrentLine(Request):
    kind: str
    channel: str = Field(pattern=CHANNEL_PATTERN)
    space: str
    entered_at: str


_KINDS: dict[str, type[SpaceLine | ItemLine | CurrentLine]] = {
    "space": SpaceLine,
    "item": ItemLine,
    "current_space": CurrentLine,
}


@dataclass
class Plan:
    """An export read and checked against a data dir, ready to be imported."""

    folder: Path
    manifest: dict
    entity: str
    exists: bool
    events: int = 0
    summaries: int = 0
    inventory: int = 0
    files: list[tuple[str, Path]] = field(default_factory=list)
    same_files: int = 0
    skipped: list[str] = field(default_factory=list)


@dataclass
class Imported:
    entity: str
    events_new: int = 0
    events_known: int = 0
    summaries_new: int = 0
    summaries_known: int = 0
    inventory_changed: int = 0
    inventory_known: int = 0
    files_copied: int = 0
    files_known: int = 0
    files_indexed: int = 0
    server: str | None = None
    notes: list[str] = field(default_factory=list)


def check(settings: Settings, folder: Path, entity: str | None = None) -> Plan:
    """Read the whole export and check it against the data dir; ExportError names the
    first problem (its file and line). Writes nothing, creates nothing."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ExportError(f"no export at {folder}: not a folder")
    try:
        manifest = json.loads((folder / portable.MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExportError(f"{folder} is not an export: it has no {portable.MANIFEST}") from None
    except (OSError, ValueError) as exc:
        raise ExportError(f"{folder / portable.MANIFEST}: not readable JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != portable.FORMAT:
        raise ExportError(f"{folder / portable.MANIFEST}: not a {portable.FORMAT} export")
    newest = migrations(MIGRATIONS_DIR)[-1].version
    if not isinstance(manifest.get("schema_version"), int) or manifest["schema_version"] > newest:
        raise ExportError(
            f"the export's schema ({manifest.get('schema_version')}) is newer than this pps"
            f" knows ({newest}): import it with a newer pps"
        )
    try:
        name = check_name(str(entity or manifest.get("entity")))
    except InputError as exc:
        raise ExportError(str(exc)) from None
    for required in (portable.EVENTS, portable.SUMMARIES, portable.INVENTORY):
        if not (folder / required).is_file():
            raise ExportError(f"{folder} is not a whole export: {required} is missing")
    target = _Target(settings, name)
    plan = Plan(folder, manifest, name, exists=target.exists())
    try:
        needed = _check_summaries(folder / portable.SUMMARIES, settings, plan)
        exported = _check_events(folder / portable.EVENTS, settings, plan, needed)
        for uid, where in needed.items():
            if uid not in exported and not target.has_event(uid):
                raise ExportError(
                    f"{where}: event {uid!r} is neither in {portable.EVENTS} nor stored"
                )
        _check_inventory(folder / portable.INVENTORY, plan, target)
        _check_home(folder / portable.HOME, settings, plan)
    finally:
        target.close()
    return plan


class _Target:
    """The data dir imported into, read without creating or migrating anything."""

    def __init__(self, settings: Settings, entity: str):
        self.entity = entity
        self.conn = None
        if settings.database_path.is_file():
            self.conn = sqlite3.connect(f"file:{settings.database_path}?mode=ro", uri=True)
            self.conn.execute(f"PRAGMA busy_timeout = {int(settings.busy_timeout_ms)}")

    def _one(self, sql: str, *params) -> bool:
        if self.conn is None:
            return False
        try:
            return self.conn.execute(sql, params).fetchone() is not None
        except Exception:  # an empty or older database: nothing of the entity is there
            return False

    def exists(self) -> bool:
        return self._one("SELECT 1 FROM entities WHERE name = ?", self.entity)

    def has_event(self, uid: str) -> bool:
        return self._one(
            "SELECT 1 FROM events WHERE entity = ? AND event_uid = ?", self.entity, uid
        )

    def has_space(self, name: str) -> bool:
        return self._one("SELECT 1 FROM spaces WHERE entity = ? AND name = ?", self.entity, name)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def _lines(path: Path) -> Iterator[tuple[str, dict]]:
    """Each non-blank line of a JSONL file as (`file line N`, its object); ExportError
    for a line that is not a JSON object."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path.name} line {number}"
            if not raw.strip():
                continue
            try:
                value = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise ExportError(f"{where}: not UTF-8 text") from None
            except ValueError as exc:
                raise ExportError(f"{where}: not JSON ({exc})") from None
            if not isinstance(value, dict):
                raise ExportError(f"{where}: not a JSON object")
            yield where, value


def _problem(where: str, exc: Exception) -> ExportError:
    if isinstance(exc, ValidationError):
        exc = from_validation(exc.errors())
    return ExportError(f"{where}: {exc}")


def _moment(where: str, name: str, value: Any) -> str:
    try:
        return timestamps.normalise(value)
    except (ValueError, TypeError) as exc:
        raise ExportError(f"{where}: {name}: {exc}") from None


def _event(where: str, line: dict, settings: Settings) -> tuple[EventIn, str]:
    """One line of events.jsonl as the event capture stores, and when it was received."""
    line = dict(line)
    received = _moment(where, "received_at", line.pop("received_at", None))
    if not line.get("event_uid"):
        raise ExportError(f"{where}: event_uid: missing (every exported event has one)")
    if not line.get("created_at"):
        raise ExportError(f"{where}: created_at: missing (every exported event has one)")
    try:
        [event] = capture.parse_events(
            line, max_batch=1, max_content_bytes=settings.max_content_bytes
        )
    except InputError as exc:
        raise ExportError(f"{where}: {exc}") from None
    return event, received


def _check_events(path: Path, settings: Settings, plan: Plan, needed: dict) -> set[str]:
    found: set[str] = set()
    for where, line in _lines(path):
        event, _ = _event(where, line, settings)
        if event.event_uid is not None and event.event_uid in needed:
            found.add(event.event_uid)
        plan.events += 1
    return found


def _check_summaries(path: Path, settings: Settings, plan: Plan) -> dict[str, str]:
    needed: dict[str, str] = {}
    for where, line in _lines(path):
        try:
            summary = SummaryLine.model_validate(line)
        except ValidationError as exc:
            raise _problem(where, exc) from None
        for name in ("created_at", "first_at", "last_at"):
            if getattr(summary, name) is not None:
                _moment(where, name, getattr(summary, name))
        needed.setdefault(summary.start_uid, where)
        needed.setdefault(summary.end_uid, where)
        plan.summaries += 1
    return needed


def _check_inventory(path: Path, plan: Plan, target: _Target) -> None:
    spaces: set[str] = set()
    for where, line in _lines(path):
        kind = line.get("kind")
        model = _KINDS.get(kind) if isinstance(kind, str) else None
        if model is None:
            raise ExportError(f"{where}: kind: one of {', '.join(_KINDS)}")
        try:
            entry = model.model_validate(line)
        except ValidationError as exc:
            raise _problem(where, exc) from None
        for name in ("created_at", "updated_at", "entered_at"):
            if hasattr(entry, name):
                _moment(where, name, getattr(entry, name))
        if isinstance(entry, SpaceLine):
            spaces.add(entry.name)
        space = getattr(entry, "space", None)
        if space is not None and space not in spaces and not target.has_space(space):
            raise ExportError(f"{where}: space: no space named {space!r} before it")
        plan.inventory += 1


def _check_home(source: Path, settings: Settings, plan: Plan) -> None:
    """Which home files to copy; refuse if one differs from the file already there."""
    root = scope.home_of(settings, plan.entity)[0]
    different = []
    for relative, path in scope.files(source, None, plan.skipped, portable.HOME):
        there = root / relative
        if there.is_file() and not there.is_symlink():
            if filecmp.cmp(path, there, shallow=False):
                plan.same_files += 1
                continue
            different.append(relative)
        elif there.exists() or there.is_symlink():
            different.append(relative)
        else:
            plan.files.append((relative, path))
    if different:
        shown = ", ".join(different[:5]) + (
            f" and {len(different) - 5} more" if len(different) > 5 else ""
        )
        raise ExportError(
            f"{len(different)} file(s) of the export differ from the ones in {plan.entity!r}'s"
            f" home ({shown}): nothing was imported; move them aside, or import under"
            " another --entity"
        )


def apply(
    settings: Settings, plan: Plan, progress: Callable[[str, int, int], None] | None = None
) -> Imported:
    """Store a checked export under `plan.entity` (which must exist by now)."""
    from engine.runtime import CAPTURE_LISTENERS
    from engine.search import embeddings
    from engine.search.index import Index

    done = Imported(plan.entity)
    db = Database.open(settings)
    try:
        if not db.conn.execute("SELECT 1 FROM entities WHERE name = ?", (plan.entity,)).fetchone():
            raise ExportError(f"no entity named {plan.entity!r}: create it first")
        _import_events(Capture(db, CAPTURE_LISTENERS), settings, plan, done, progress)
        _import_summaries(db, plan, done)
        _import_inventory(db, plan, done)
        home = scope.home_of(settings, plan.entity)[0]
        if settings.entity_homes.get(plan.entity) is None:
            ensure_private_dir(home)
        for relative, path in plan.files:
            try:
                copy_file(path, home / relative, replace=False)
                done.files_copied += 1
            except FileExistsError:
                if not filecmp.cmp(path, home / relative, shallow=False):
                    raise ExportError(
                        f"{relative} appeared in the home while the import ran, different:"
                        " it is left alone; run the import again to see what is left"
                    ) from None
                done.files_known += 1
        done.files_known += plan.same_files
        index = Index(settings, db)
        report = index.sync_entity(plan.entity)
        done.files_indexed = report.added + report.updated + report.unchanged
        try:
            embeddings.get(settings)
        except embeddings.Unavailable as exc:
            done.notes.append(f"search ranks by words only until the model loads: {exc}")
    finally:
        db.close()
    owner = lock.owner(settings.data_dir)
    done.server = str(owner) if owner is not None else None
    return done


def _import_events(
    capturing: Capture,
    settings: Settings,
    plan: Plan,
    done: Imported,
    progress: Callable[[str, int, int], None] | None,
) -> None:
    batch: list[EventIn] = []
    received: list[str] = []
    count = 0

    def flush() -> None:
        nonlocal count
        results = capturing.record(plan.entity, batch, received=received)
        new = sum(1 for r in results if not r.duplicate)
        done.events_new += new
        done.events_known += len(results) - new
        count += len(results)
        batch.clear()
        received.clear()
        if progress:
            progress("events", count, plan.events)

    size = min(_BATCH, settings.max_batch)
    for where, line in _lines(plan.folder / portable.EVENTS):
        event, at = _event(where, line, settings)
        batch.append(event)
        received.append(at)
        if len(batch) >= size:
            flush()
    if batch:
        flush()


def _event_id(conn, entity: str, uid: str) -> int:
    return conn.execute(
        "SELECT id FROM events WHERE entity = ? AND event_uid = ?", (entity, uid)
    ).fetchone()[0]


def _import_summaries(db: Database, plan: Plan, done: Imported) -> None:
    for _, line in _lines(plan.folder / portable.SUMMARIES):
        summary = SummaryLine.model_validate(line)
        channels = json.dumps(summary.channels) if summary.channels else None
        with db.write() as conn:
            start = _event_id(conn, plan.entity, summary.start_uid)
            end = _event_id(conn, plan.entity, summary.end_uid)
            if conn.execute(
                "SELECT 1 FROM summaries WHERE entity = ? AND start_id = ? AND end_id = ?"
                " AND summary_type = ? AND channels IS ? AND summary_text = ?",
                (plan.entity, start, end, summary.summary_type, channels, summary.summary_text),
            ).fetchone():
                done.summaries_known += 1
                continue
            conn.execute(
                "INSERT INTO summaries (entity, summary_text, summary_type, start_id, end_id,"
                " channels, event_count, first_at, last_at, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    plan.entity,
                    summary.summary_text,
                    summary.summary_type,
                    min(start, end),
                    max(start, end),
                    channels,
                    summary.event_count,
                    _stamp(summary.first_at),
                    _stamp(summary.last_at),
                    timestamps.normalise(summary.created_at),
                ),
            )
            done.summaries_new += 1


def _stamp(value: str | None) -> str | None:
    return None if value is None else timestamps.normalise(value)


def _import_inventory(db: Database, plan: Plan, done: Imported) -> None:
    """Spaces, items and current spaces: added, or updated when the export's is newer
    than the one there; otherwise left alone."""
    for _, line in _lines(plan.folder / portable.INVENTORY):
        entry = _KINDS[line["kind"]].model_validate(line)
        with db.write() as conn:
            if isinstance(entry, SpaceLine):
                changed = _put_space(conn, plan.entity, entry)
            elif isinstance(entry, ItemLine):
                changed = _put_item(conn, plan.entity, entry)
            else:
                changed = _put_current(conn, plan.entity, entry)
        if changed:
            done.inventory_changed += 1
        else:
            done.inventory_known += 1


def _space_id(conn, entity: str, name: str) -> int:
    return conn.execute(
        "SELECT id FROM spaces WHERE entity = ? AND name = ?", (entity, name)
    ).fetchone()[0]


def _put_space(conn, entity: str, entry: SpaceLine) -> bool:
    cursor = conn.execute(
        "INSERT INTO spaces (entity, name, description, channel, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (entity, name) DO UPDATE"
        " SET description = excluded.description, channel = excluded.channel,"
        " updated_at = excluded.updated_at WHERE excluded.updated_at > updated_at",
        (
            entity,
            entry.name,
            entry.description,
            entry.channel,
            timestamps.normalise(entry.created_at),
            timestamps.normalise(entry.updated_at),
        ),
    )
    return bool(cursor.rowcount)


def _put_item(conn, entity: str, entry: ItemLine) -> bool:
    space = None if entry.space is None else _space_id(conn, entity, entry.space)
    cursor = conn.execute(
        "INSERT INTO inventory_items (entity, name, category, subcategory,"
        " description, attributes, space_id, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (entity, category, name)"
        " DO UPDATE SET subcategory = excluded.subcategory,"
        " description = excluded.description, attributes = excluded.attributes,"
        " space_id = excluded.space_id, updated_at = excluded.updated_at"
        " WHERE excluded.updated_at > updated_at",
        (
            entity,
            entry.name,
            entry.category,
            entry.subcategory,
            entry.description,
            json.dumps(entry.attributes),
            space,
            timestamps.normalise(entry.created_at),
            timestamps.normalise(entry.updated_at),
        ),
    )
    return bool(cursor.rowcount)


def _put_current(conn, entity: str, entry: CurrentLine) -> bool:
    cursor = conn.execute(
        "INSERT INTO current_spaces (entity, channel, space_id, entered_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (entity, channel) DO UPDATE"
        " SET space_id = excluded.space_id, entered_at = excluded.entered_at"
        " WHERE excluded.entered_at > entered_at",
        (
            entity,
            entry.channel,
            _space_id(conn, entity, entry.space),
            timestamps.normalise(entry.entered_at),
        ),
    )
    return bool(cursor.rowcount)
