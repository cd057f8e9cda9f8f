"""The SQLite store: opening connections, pragmas, file permissions and migrations.

One database file per data dir, in WAL mode with a busy timeout. The schema comes
only from `migrations/NNNN_name.sql`, applied in order at start and recorded in
`schema_migrations`. Writes in this process go through one lock, so threads queue
here rather than spinning on SQLite's busy handler.
"""

from __future__ import annotations

import logging
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from engine.kernel import timestamps
from engine.kernel.errors import Unavailable
from engine.kernel.files import ensure_private_dir, ensure_private_file

_HERE = Path(__file__).resolve().parent
# A wheel carries the .sql files inside this package (pyproject.toml force-includes them);
# a checkout has them in the repository's top-level migrations/.
_SHIPPED, _CHECKOUT = _HERE / "migrations", _HERE.parents[1] / "migrations"
MIGRATIONS_DIR = _SHIPPED if _SHIPPED.is_dir() else _CHECKOUT
_MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_SQLITE_FULL = 13
_ROOM_BYTES = 1024 * 1024
"""Space that must be free again, in the database and on its disk, before a database
that ran out of it is said to have room."""
_ROOM_CHECK_S = 1.0
_DROP_WARN_S = 60.0
_FTS_TABLE = re.compile(r"^[a-z_]+_fts$")
"""At most one warning this often for each kind of write a read drops."""

log = logging.getLogger("pps.db")


@dataclass(frozen=True)
class OutOfSpace:
    """The last write failed for lack of space (SQLITE_FULL: the disk, or a size limit)."""

    error: str
    since: str


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path


class MigrationsMissing(RuntimeError):
    """The schema cannot be built: an installation without its migrations is broken."""


def migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """The migrations in `directory`, in order. None at all is an error, never "0 applied"."""
    if not directory.is_dir():
        raise MigrationsMissing(f"no migrations folder at {directory}: the install is incomplete")
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise RuntimeError(f"migration file {path.name} is not named NNNN_name.sql")
        found.append(Migration(int(match[1]), match[2], path))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a number: {versions}")
    if not found:
        raise MigrationsMissing(f"no NNNN_name.sql files in {directory}: the install is incomplete")
    return found


class Database:
    """A SQLite database file with per-thread connections and one writer at a time."""

    def __init__(self, path: Path, *, busy_timeout_ms: int = 10_000, synchronous: str = "FULL"):
        self.path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._synchronous = synchronous
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._out_of_space: OutOfSpace | None = None
        self._room_checked = 0.0
        self._dropped: dict[str, int] = {}
        self._drop_warned: dict[str, float] = {}
        self._drop_lock = threading.Lock()
        ensure_private_dir(path.parent)
        ensure_private_file(path)

    @classmethod
    def open(cls, settings) -> Database:
        """Open the settings' database and bring its schema up to date."""
        ensure_private_dir(settings.data_dir)
        db = cls(
            settings.database_path,
            busy_timeout_ms=settings.busy_timeout_ms,
            synchronous=settings.sqlite_synchronous,
        )
        db.migrate()
        return db

    def connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=0)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        # What a row held before it was rewritten or deleted is zeroed in the file, not
        # left in free space for anyone reading the file to find (a forget: `scrub`).
        conn.execute("PRAGMA secure_delete = ON")
        with self._all_lock:
            self._all.append(conn)
        return conn

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection (for reads; writes go through `write()`)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self.connect()
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction; committed when the block exits, rolled back on error.
        A write the database has no space for (a full disk) raises Unavailable("database")
        and changes nothing."""
        conn = self.conn
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                # SQLite may have rolled back already (SQLITE_FULL can end the transaction).
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if not _is_full(exc):
                    raise
                if self._out_of_space is None:
                    self._out_of_space = OutOfSpace(str(exc), timestamps.now())
                raise Unavailable(
                    "database",
                    f"the disk is full ({exc}): nothing was written; try again once there is space",
                ) from exc

    def scrub(self, tables: Sequence[str]) -> bool:
        """Leave no old copy of what was rewritten or deleted in the database's files
        (after a forget): each full-text index in `tables` is merged into one segment,
        since its older segments still hold the words of rows deleted from it (the pages
        they free are zeroed: secure_delete), then the WAL is copied into the file and
        emptied. False when a reader kept the WAL from being emptied (what it holds is
        written over as the database is used)."""
        with self.write() as conn:
            for table in tables:
                if not _FTS_TABLE.fullmatch(table):
                    raise ValueError(f"not a full-text table: {table!r}")
                conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
        busy, *_ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return not busy

    @contextmanager
    def dropping(self, what: str) -> Iterator[None]:
        """Around a write that a read makes on the side (the recall log, re-indexing a
        file a search found changed): if the database refuses it (the disk is full, or it
        stays locked), the write is dropped and the read answers. Each drop is counted
        under `what` (`dropped_writes()`, in /health) and warned about at most once a
        minute for each `what`."""
        try:
            yield
        except (Unavailable, sqlite3.OperationalError) as exc:
            if isinstance(exc, Unavailable) and exc.component != "database":
                raise
            now = time.monotonic()
            with self._drop_lock:
                count = self._dropped[what] = self._dropped.get(what, 0) + 1
                warn = now >= self._drop_warned.get(what, 0.0)
                if warn:
                    self._drop_warned[what] = now + _DROP_WARN_S
            if warn:
                why = " ".join(str(exc.__cause__ or exc).split())[:300]
                log.warning("%s not written (%s); %d dropped since start", what, why, count)

    def dropped_writes(self) -> dict[str, int]:
        """How many writes of each kind reads have dropped since start (`dropping`)."""
        with self._drop_lock:
            return dict(self._dropped)

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """Reads that all see one state of the database (one read transaction), however
        much is written meanwhile; inside a transaction already, that one."""
        conn = self.conn
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def out_of_space(self) -> OutOfSpace | None:
        """Why writes fail for lack of space, or None. Once one has failed, this checks
        whether there is room again (a write of _ROOM_BYTES would fit, and the disk has
        that much free; at most once a _ROOM_CHECK_S), so the answer recovers without
        waiting for the next write. A small write that succeeds meanwhile proves nothing: a
        full disk takes some."""
        if self._out_of_space is not None and time.monotonic() >= self._room_checked:
            self._room_checked = time.monotonic() + _ROOM_CHECK_S
            if self._has_room():
                self._out_of_space = None
        return self._out_of_space

    def _has_room(self) -> bool:
        try:
            if shutil.disk_usage(self.path.parent).free < _ROOM_BYTES:
                return False
            with self.write() as conn:
                conn.execute("CREATE TABLE pps_room_probe (b BLOB)")
                conn.execute("INSERT INTO pps_room_probe VALUES (zeroblob(?))", (_ROOM_BYTES,))
                raise _Probed  # rolled back: the pages could be had
        except _Probed:
            return True
        except (Unavailable, OSError, sqlite3.Error):
            return False

    def schema_version(self) -> int:
        exists = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ).fetchone()
        if exists is None:
            return 0
        return self.conn.execute(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"
        ).fetchone()[0]

    def migrate(self, upto: int | None = None, directory: Path = MIGRATIONS_DIR) -> int:
        """Apply, in order, every migration not yet recorded (up to version `upto`); return
        the highest version applied. Numbers may have gaps (layers reserve ranges)."""
        with self.write() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            for migration in migrations(directory):
                if migration.version in applied or (upto is not None and migration.version > upto):
                    continue
                for statement in _statements(migration.path.read_text()):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.name, timestamps.now()),
                )
        return self.schema_version()

    def close(self) -> None:
        """Close every thread's connection, once a write in progress is done: a thread
        still writing (a worker that outlived the runtime's stop on a busy machine) must
        not have its connection closed under it, which crashes the process."""
        with self._write_lock, self._all_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()


class _Probed(Exception):
    pass


def _is_full(exc: BaseException) -> bool:
    """SQLITE_FULL: the disk is full, or the database reached its size limit."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.Error) and code is not None and code & 0xFF == _SQLITE_FULL


def _statements(script: str) -> Iterator[str]:
    """Split a migration into complete statements (triggers included), so that the
    whole migration runs inside the caller's transaction."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                yield pending
            pending = ""
    if pending.strip() and not _only_comments(pending):
        raise RuntimeError(f"incomplete SQL statement at the end of a migration: {pending!r}")


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())
