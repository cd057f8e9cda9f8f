"""`pps backup`: one archive of a data dir (or of one entity), taken while the server
runs (SQLite's online backup API reads one consistent state while writers carry on),
complete before it takes its name, and recorded (records). What the archive holds is
in archive; `restoring` reads it back.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sqlite3
import tarfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from engine.backup import records, scope
from engine.backup.archive import CHUNK, DATABASE, FORMAT, MANIFEST, SEAL, WRAPPED, BackupError
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.search import homes
from engine.store.db import Database

GRAPH_NOTE = (
    "The graph is not in this archive: it is derived from the event log. After a restore,"
    " `pps replay graph` rebuilds it (with an LLM configured)."
)


@dataclass
class Written:
    """A backup, as `pps backup` reports it."""

    path: Path
    size: int
    sha256: str
    encrypted: str | None
    manifest: dict
    record: records.BackupRecord | None = None


@dataclass(frozen=True)
class Encryption:
    """How an archive is wrapped: a passphrase (age scrypt) or age recipients."""

    passphrase: str | None = None
    recipients: tuple[str, ...] = ()

    @property
    def mode(self) -> str:
        return "recipient" if self.recipients else "passphrase"


def create(
    settings: Settings,
    out: Path,
    *,
    entity: str | None = None,
    encryption: Encryption | None = None,
    version: str = "unknown",
) -> Written:
    """Write the archive to `out` (refusing an existing file), 0600, complete before it
    appears under its name, and record it in the database."""
    out = Path(out).absolute()
    if out.exists() or out.is_symlink():
        raise BackupError(f"{out} exists: a backup never overwrites a file; name another")
    if not out.parent.is_dir():
        raise BackupError(f"{out.parent} is not a folder")
    if not settings.database_path.is_file():
        raise BackupError(f"no database at {settings.database_path}: nothing to back up")
    recipients = _recipients(encryption)
    stem = f".{out.name}.{uuid.uuid4().hex[:12]}"
    snapshot = out.parent / f"{stem}.sqlite3.tmp"
    plain = out.parent / f"{stem}.tar.tmp"
    sealed = out.parent / f"{stem}.age.tmp"
    try:
        facts = _snapshot(settings.database_path, snapshot, entity)
        manifest = _write_tar(settings, snapshot, plain, entity, facts, version)
        snapshot.unlink()
        final = plain
        if encryption is not None:
            _encrypt(plain, sealed, encryption, recipients)
            plain.unlink()
            final = sealed
        size, digest = final.stat().st_size, _file_sha256(final)
        _publish(final, out)
    finally:
        for temporary in (snapshot, plain, sealed, *_sqlite_sidecars(snapshot)):
            temporary.unlink(missing_ok=True)
    written = Written(out, size, digest, encryption.mode if encryption else None, manifest)
    db = Database.open(settings)
    try:
        written.record = records.add(
            db,
            entity=entity,
            archive=out.name,
            size=size,
            sha256=digest,
            encrypted=written.encrypted,
            events=sum(e["events"] for e in manifest["entities"]),
            files=sum(e["files"] for e in manifest["entities"])
            + sum(s["files"] for s in manifest["shared_stores"]),
            entities=len(manifest["entities"]),
            created_at=manifest["created_at"],
        )
    finally:
        db.close()
    return written


@dataclass
class _Facts:
    schema_version: int
    entities: list[str]
    stores: list[str]
    events: dict[str, int]
    chunks: dict[str, int]
    vectors: dict[str, int]


def _snapshot(source: Path, target: Path, entity: str | None) -> _Facts:
    """A consistent copy of the live database through SQLite's online backup API (one
    read transaction: writers carry on), cut down to one entity when asked."""
    os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    live = sqlite3.connect(source, timeout=30)
    copy = sqlite3.connect(target)
    try:
        live.execute("PRAGMA busy_timeout = 30000")
        live.backup(copy)
        copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
        if entity is not None:
            _keep_only(copy, entity)
        names = [
            r[0] for r in copy.execute("SELECT name FROM entities ORDER BY name") if ":" not in r[0]
        ]
        if entity is not None and entity not in names:
            raise BackupError(f"no entity named {entity!r}")
        stores = [r[0] for r in copy.execute("SELECT name FROM shared_stores ORDER BY name")]
        version = copy.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
        return _Facts(
            schema_version=version.fetchone()[0],
            entities=names,
            stores=stores,
            events=_count(copy, "SELECT entity, COUNT(*) FROM events GROUP BY entity"),
            chunks=_count(copy, "SELECT entity, COUNT(*) FROM search_chunks GROUP BY entity"),
            vectors=_count(copy, "SELECT entity, COUNT(*) FROM search_vectors GROUP BY entity"),
        )
    finally:
        copy.close()
        live.close()


def _count(conn: sqlite3.Connection, sql: str) -> dict[str, int]:
    return {row[0]: row[1] for row in conn.execute(sql)}


# Tables whose rows are not marked by an `entity` column: what an entity's archive keeps
# of each (None: every row; those rows belong to nobody and say nothing of anyone).
_OTHER_TABLES: dict[str, str | None] = {
    "schema_migrations": None,
    "entities": "DELETE FROM entities WHERE name != :entity",
    "episode_events": "DELETE FROM episode_events WHERE episode_uuid NOT IN"
    " (SELECT uuid FROM episodes WHERE entity = :entity)",
    # Shared stores belong to several entities: only whole backups hold them.
    "shared_stores": "DELETE FROM shared_stores",
    "shared_members": "DELETE FROM shared_members",
    "shared_memories": "DELETE FROM shared_memories",
    # The whole service's credential, history and LLM endpoints, not the entity's.
    "operator_tokens": "DELETE FROM operator_tokens",
    "backups": "DELETE FROM backups",
    "llm_dialects": "DELETE FROM llm_dialects",
}
ENTITY_ARCHIVE_HOLDS = (
    "one entity: its row in entities (its token's hash, so its token works after a"
    " restore), and its rows of every table marked by entity (events, jobs, search files,"
    " chunks and vectors, episodes, summaries, inventory, spaces, the recall log). No other"
    " entity's rows, no shared store, no operator token, no backup history, no LLM"
    " endpoint's learned dialect; the full-text"
    " indexes are rebuilt from what is kept and the file is vacuumed, so nothing deleted"
    " stays in its free pages."
)
WHOLE_ARCHIVE_HOLDS = (
    "the whole data dir: every entity, the shared stores, the operator token's hash and"
    " the backup history."
)


def _keep_only(conn: sqlite3.Connection, entity: str) -> None:
    """Delete every row of every other entity from the snapshot (never from the live
    database). A table no rule here places is refused: a new migration must say whose
    its rows are before an entity's archive may hold it."""
    virtual = scope.virtual_tables(conn)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("BEGIN")
    for name, marked in scope.tables(conn):
        if name in _OTHER_TABLES:
            statement = _OTHER_TABLES[name]
        elif marked:
            statement = f'DELETE FROM "{name}" WHERE entity != :entity'
        else:
            conn.execute("ROLLBACK")
            raise BackupError(
                f"table {name!r} has no entity column and no rule in engine/backup/archiving.py"
                " says whose its rows are: an entity's archive cannot be made safely"
            )
        if statement is not None:
            conn.execute(statement, {"entity": entity})
    for name in virtual:  # drop what the deleted rows left in the indexes' segments
        conn.execute(f'INSERT INTO "{name}" ("{name}") VALUES (\'rebuild\')')
    conn.execute("COMMIT")
    dangling = conn.execute("PRAGMA foreign_key_check").fetchall()
    if dangling:
        raise BackupError(f"the entity's snapshot has dangling references: {dangling[:3]}")
    conn.execute("VACUUM")


def _write_tar(
    settings: Settings,
    snapshot: Path,
    target: Path,
    entity: str | None,
    facts: _Facts,
    version: str,
) -> dict:
    members: list[dict] = []
    entity_rows, store_rows = [], []
    skipped: list[str] = []
    fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "wb") as raw:
        sink = _HashingWriter(raw)
        # typeshed's file protocol also asks for read, seek and close, which tarfile's
        # write mode never calls on a file it is given.
        with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
            database = _add_file(tar, DATABASE, snapshot)
            if database is None:  # the snapshot is this backup's own, made just before
                raise BackupError(f"the snapshot {snapshot} vanished: run the backup again")
            members.append(database)
            for name in facts.entities:
                root, configured, tops = scope.home_of(settings, name)
                count = 0
                for relative, path in scope.files(root, tops, skipped, name):
                    added = _add_file(tar, f"entities/{name}/{relative}", path)
                    if added is not None:
                        members.append(added)
                        count += 1
                entity_rows.append(
                    {
                        "name": name,
                        "events": facts.events.get(name, 0),
                        "search_chunks": facts.chunks.get(name, 0),
                        "vectors": facts.vectors.get(name, 0),
                        "files": count,
                        "home": "configured elsewhere (PPS_ENTITY_HOMES): the files pps"
                        " holds were copied"
                        if configured
                        else "in the data dir",
                    }
                )
            for store in facts.stores if entity is None else []:
                count = 0
                root = homes.shared_dir(settings) / store
                for relative, path in scope.files(root, None, skipped, f"shared:{store}"):
                    added = _add_file(tar, f"shared/{store}/{relative}", path)
                    if added is not None:
                        members.append(added)
                        count += 1
                key = homes.store_key(store)
                store_rows.append(
                    {"name": store, "files": count, "search_chunks": facts.chunks.get(key, 0)}
                )
            manifest = {
                "format": FORMAT,
                "pps_version": version,
                "schema_version": facts.schema_version,
                "created_at": timestamps.now(),
                "scope": "entity" if entity else "all",
                "entity": entity,
                "holds": ENTITY_ARCHIVE_HOLDS if entity else WHOLE_ARCHIVE_HOLDS,
                "entities": entity_rows,
                "shared_stores": store_rows,
                "shared_stores_note": (
                    "not in an entity's archive: several entities share them"
                    if entity
                    else "every store's folder and records"
                ),
                "graph": GRAPH_NOTE,
                "search_index": "in the database (chunks, full-text, vectors): search answers"
                " at once after a restore",
                "skipped": skipped,
                "members": members,
                "prefix_sha256": sink.hexdigest(),
                "prefix_bytes": sink.tell(),
            }
            text = json.dumps(manifest, indent=2, sort_keys=True).encode()
            _add_bytes(tar, MANIFEST, text)
            _add_bytes(tar, SEAL, (hashlib.sha256(text).hexdigest() + "\n").encode())
        raw.flush()
        os.fsync(raw.fileno())
    return manifest


def _add_file(tar: tarfile.TarFile, name: str, path: Path) -> dict | None:
    """Stream one file into the archive, hashing it on the way; None if it vanished.
    A file that shrinks while read is refused: run the backup again."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        return None
    with handle:
        stat = os.fstat(handle.fileno())
        info = _info(name, stat.st_size, int(stat.st_mtime))
        reader = _HashingReader(handle, stat.st_size, name)
        tar.addfile(info, reader)
        reader.finish()
    return {"path": name, "size": stat.st_size, "sha256": reader.hexdigest()}


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    tar.addfile(_info(name, len(data), None), io.BytesIO(data))


def _info(name: str, size: int, mtime: int | None) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o600
    info.mtime = mtime if mtime is not None else int(time.time())
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


class _HashingReader:
    """A file read by tarfile: exactly `size` bytes, hashed as they pass."""

    def __init__(self, handle, size: int, name: str):
        self._handle, self._left, self._name = handle, size, name
        self._sha = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        n = self._left if n is None or n < 0 else min(n, self._left)
        data = self._handle.read(n)
        if len(data) < n:
            raise BackupError(f"{self._name} shrank while it was read: run the backup again")
        self._left -= len(data)
        self._sha.update(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def finish(self) -> None:
        if self._left:
            raise BackupError(f"{self._name} was not read whole: run the backup again")

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


class _HashingWriter:
    """The archive's file as tarfile writes it: every byte hashed, in order."""

    def __init__(self, raw):
        self._raw, self._sha, self._count = raw, hashlib.sha256(), 0

    def write(self, data) -> int:
        self._raw.write(data)
        self._sha.update(data)
        self._count += len(data)
        return len(data)

    def tell(self) -> int:
        return self._count

    def flush(self) -> None:
        self._raw.flush()

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def _recipients(encryption: Encryption | None) -> list:
    if encryption is None or not encryption.recipients:
        if encryption is not None and not encryption.passphrase:
            raise BackupError("an empty passphrase encrypts nothing: give one")
        return []
    from pyrage import RecipientError, ssh, x25519

    found = []
    for text in encryption.recipients:
        try:
            if text.startswith("age1"):
                found.append(x25519.Recipient.from_str(text.strip()))
            else:
                found.append(ssh.Recipient.from_str(text.strip()))
        except (RecipientError, ValueError) as exc:
            raise BackupError(f"not an age recipient (age1...) or SSH key: {exc}") from None
    return found


def _encrypt(plain: Path, target: Path, encryption: Encryption, recipients: list) -> None:
    import pyrage

    fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "wb") as out:
        if not recipients:  # pyrage's passphrase mode takes whole bytes: wrap a key in it
            key = pyrage.x25519.Identity.generate()
            wrapped = pyrage.passphrase.encrypt(str(key).encode(), encryption.passphrase)
            out.write(WRAPPED + b"%d\n" % len(wrapped) + wrapped)
            recipients = [key.to_public()]
        with open(plain, "rb") as source:  # streamed: age's STREAM, 64 KiB chunks
            pyrage.encrypt_io(source, out, recipients)
        out.flush()
        os.fsync(out.fileno())


def _publish(temporary: Path, out: Path) -> None:
    """Give the finished file its name, never replacing a file that took it meanwhile."""
    try:
        os.link(temporary, out)
    except FileExistsError:
        raise BackupError(f"{out} appeared while the backup ran: it is left alone") from None
    except OSError:  # no hard links here (some network and FUSE file systems)
        if out.exists():
            raise BackupError(f"{out} appeared while the backup ran: it is left alone") from None
        os.rename(temporary, out)
    with contextlib.suppress(OSError):
        directory = os.open(out.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def _sqlite_sidecars(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in ("-journal", "-wal", "-shm")]


def _file_sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            sha.update(chunk)
    return sha.hexdigest()
