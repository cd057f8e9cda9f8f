"""`pps backup` and `pps restore`: one archive of a data dir (or of one entity), taken
while the server runs, and a restore that checks every byte before it writes one.

The archive is a tar, streamed to disk member by member (memory stays flat whatever
the size), optionally wrapped whole in age (pyrage):

    database/pps.sqlite3            the SQLite online-backup snapshot (one consistent state)
    entities/<entity>/...           each entity's home: markdown, fragments, crystals
    shared/<store>/...              shared stores' folders (whole backups only)
    manifest.json                   versions, entities, counts, size and sha256 of each member,
                                    and the sha256 of every archive byte before it
    manifest.json.sha256            the manifest's own sha256

The graph is not in it: it is derived from the event log, and `pps replay graph` rebuilds
it after a restore. The search index (chunks, FTS, vectors) lives in the database, so
search answers at once.

A restore reads the archive twice: first it checks everything (each member against the
manifest, no member missing or extra, the bytes between members, the manifest against
its seal), then it writes. A wrong passphrase or key, a flipped byte, a missing or an
extra member: refused, and nothing is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ValidationError

from engine.backup import records, scope
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.kernel.files import ensure_private_dir
from engine.search import homes
from engine.store.db import MIGRATIONS_DIR, Database, migrations

FORMAT = "pps-backup/1"
DATABASE = "database/pps.sqlite3"
MANIFEST = "manifest.json"
SEAL = "manifest.json.sha256"
_CHUNK = 1024 * 1024
_BLOCK = tarfile.BLOCKSIZE
_AGE_MAGIC = b"age-encryption.org/v1\n"
_WRAPPED = b"pps-backup age key wrapped by a passphrase v1\n"
"""A passphrase archive: this line, the length of the next part, a one-time age key
encrypted with the passphrase (age scrypt, a few hundred bytes), then the archive
streamed to that key (age STREAM): memory stays flat, as with a key of one's own."""
GRAPH_NOTE = (
    "The graph is not in this archive: it is derived from the event log. After a restore,"
    " `pps replay graph` rebuilds it (with an LLM configured)."
)


class BackupError(Exception):
    """Why a backup or a restore did not happen; nothing was left behind."""


class _Member(BaseModel):
    path: str
    size: int
    sha256: str


class _Listed(BaseModel):
    name: str
    home: str = ""


class _Manifest(BaseModel):
    """The parts of a manifest a restore reads, as a restore needs them: a manifest whose
    seal was made anew over other shapes is refused with the field that is wrong."""

    schema_version: int
    members: list[_Member]
    entities: list[_Listed]
    prefix_bytes: int
    prefix_sha256: str


@dataclass
class Written:
    """A backup, as `pps backup` reports it."""

    path: Path
    size: int
    sha256: str
    encrypted: str | None
    manifest: dict
    record: records.BackupRecord | None = None


@dataclass
class Restored:
    data_dir: Path
    manifest: dict
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Encryption:
    """How an archive is wrapped: a passphrase (age scrypt) or age recipients."""

    passphrase: str | None = None
    recipients: tuple[str, ...] = ()

    @property
    def mode(self) -> str:
        return "recipient" if self.recipients else "passphrase"


# --- backup -------------------------------------------------------------------------


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
    # The whole service's credential and history, not the entity's.
    "operator_tokens": "DELETE FROM operator_tokens",
    "backups": "DELETE FROM backups",
}
ENTITY_ARCHIVE_HOLDS = (
    "one entity: its row in entities (its token's hash, so its token works after a"
    " restore), and its rows of every table marked by entity (events, jobs, search files,"
    " chunks and vectors, episodes, summaries, inventory, spaces, the recall log). No other"
    " entity's rows, no shared store, no operator token, no backup history; the full-text"
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
                f"table {name!r} has no entity column and no rule in engine/backup/archive.py"
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
        with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tar:
            members.append(_add_file(tar, DATABASE, snapshot))
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
            out.write(_WRAPPED + b"%d\n" % len(wrapped) + wrapped)
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
        while chunk := handle.read(_CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


# --- restore ------------------------------------------------------------------------


def kind(archive: Path) -> str:
    """`plain`, `passphrase` or `recipient`: how an archive is wrapped (age's header
    names its recipients' kind)."""
    with open(archive, "rb") as handle:
        head = handle.read(4096)
    if head.startswith(_WRAPPED):
        return "passphrase"
    if not head.startswith(_AGE_MAGIC):
        return "plain"
    stanzas = [line for line in head.split(b"\n") if line.startswith(b"-> ")]
    return "passphrase" if stanzas and stanzas[0].startswith(b"-> scrypt") else "recipient"


def restore(
    archive: Path,
    data_dir: Path,
    *,
    passphrase: Callable[[], str] | None = None,
    identities: list[str] | None = None,
) -> Restored:
    """Check the whole archive, then write it into `data_dir` (missing or empty). Any
    refusal leaves `data_dir` as it was."""
    archive, target = Path(archive), Path(data_dir).absolute()
    if not archive.is_file():
        raise BackupError(f"no archive at {archive}")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise BackupError(f"{target} is not an empty folder: a restore writes only into one")
    if not target.parent.is_dir():
        raise BackupError(f"{target.parent} is not a folder")
    with _plaintext(archive, target.parent, passphrase, identities) as source:
        manifest = _verify(source)
        made = not target.exists()
        try:
            _extract(source, target, manifest)
        except BaseException:
            if made:
                shutil.rmtree(target, ignore_errors=True)
            else:
                for child in target.iterdir():
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
            raise
    notes = ["the graph is not in the archive: `pps replay graph` rebuilds it from the events"]
    elsewhere = [e["name"] for e in manifest["entities"] if "elsewhere" in e.get("home", "")]
    if elsewhere:
        notes.append(
            f"the homes of {', '.join(elsewhere)} were configured elsewhere; they are now in"
            " <data dir>/entities/<name> (point PPS_ENTITY_HOMES at a copy to keep them apart)"
        )
    return Restored(target, manifest, notes)


@contextlib.contextmanager
def _plaintext(archive: Path, scratch: Path, passphrase, identities) -> Iterator:
    """The archive as a seekable plain tar: the file itself, or its decryption streamed
    into an unnamed 0600 file beside the target, gone when closed."""
    import_kind = kind(archive)
    if import_kind == "plain":
        with open(archive, "rb") as handle:
            yield handle
        return
    import pyrage

    with open(archive, "rb") as handle:
        if import_kind == "passphrase":
            if passphrase is None:
                raise BackupError("the archive is encrypted with a passphrase: give it")
            keys = [_unwrap(handle, passphrase())]
        elif not identities:
            raise BackupError("the archive is encrypted to an age key: give --identity FILE")
        else:
            keys = _identities(identities)
        with tempfile.TemporaryFile(dir=scratch) as clear:
            try:
                pyrage.decrypt_io(handle, clear, keys)
            except (pyrage.DecryptError, OSError) as exc:
                raise BackupError(
                    f"cannot decrypt: the key does not open it, or the archive is damaged ({exc})"
                ) from None
            clear.seek(0)
            yield clear


def _unwrap(handle, secret: str):
    """The one-time key of a passphrase archive, read from its head."""
    import pyrage

    handle.readline()  # _WRAPPED
    try:
        size = int(handle.readline())
        text = pyrage.passphrase.decrypt(handle.read(size), secret).decode()
        return pyrage.x25519.Identity.from_str(text)
    except ValueError:
        raise _damaged("its head") from None
    except pyrage.DecryptError as exc:
        raise BackupError(
            f"cannot decrypt: the passphrase is wrong, or the archive is damaged ({exc})"
        ) from None


def _identities(texts: list[str]) -> list:
    from pyrage import IdentityError, x25519

    keys = []
    for text in texts:
        for line in text.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                try:
                    keys.append(x25519.Identity.from_str(line))
                except (IdentityError, ValueError):
                    raise BackupError("the identity file holds no age secret key") from None
    if not keys:
        raise BackupError("the identity file holds no age secret key (AGE-SECRET-KEY-1...)")
    return keys


def _damaged(detail: str) -> BackupError:
    return BackupError(f"the archive is damaged or was altered ({detail}): nothing was written")


def _verify(source) -> dict:
    """The first pass: every check, nothing written. Returns the manifest."""
    source.seek(0, os.SEEK_END)
    end = source.tell()
    source.seek(0)
    found: dict[str, tuple[int, str]] = {}
    order: list[tarfile.TarInfo] = []
    data: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=source, mode="r:") as tar:
            for member in tar:
                if member.name in found:
                    raise _damaged(f"{member.name} appears twice")
                if not member.isreg():
                    raise _damaged(f"{member.name} is not a plain file")
                if not _safe(member.name):
                    raise _damaged(f"{member.name!r} is not a name a pps archive holds")
                handle = tar.extractfile(member)
                sha = hashlib.sha256()
                while chunk := handle.read(_CHUNK):
                    sha.update(chunk)
                    if member.name in (MANIFEST, SEAL):
                        data[member.name] = data.get(member.name, b"") + chunk
                found[member.name] = (member.size, sha.hexdigest())
                order.append(member)
    except tarfile.TarError as exc:
        raise BackupError(
            f"not a pps archive, or a damaged one ({exc}): nothing was written"
        ) from None
    if len(order) < 2 or [m.name for m in order[-2:]] != [MANIFEST, SEAL]:
        raise _damaged("its manifest is missing or not at its end")
    text = data.get(MANIFEST, b"")
    if data.get(SEAL, b"") != (hashlib.sha256(text).hexdigest() + "\n").encode():
        raise _damaged("the manifest does not match its seal")
    try:
        manifest = json.loads(text)
    except ValueError:
        raise _damaged("the manifest is not JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise BackupError(f"not a {FORMAT} archive (format {found!r})")
    try:
        _Manifest.model_validate(manifest)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise _damaged(f"the manifest's {where}: {first['msg'].lower()}") from None
    newest = migrations(MIGRATIONS_DIR)[-1].version
    if manifest.get("schema_version", 0) > newest:
        raise BackupError(
            f"the archive's schema ({manifest['schema_version']}) is newer than this pps"
            f" knows ({newest}): restore it with a newer pps"
        )
    listed = {m["path"]: (m["size"], m["sha256"]) for m in manifest["members"]}
    for name in found:
        if name not in listed and name not in (MANIFEST, SEAL):
            raise _damaged(f"{name} is not in the manifest")
    for name, expected in listed.items():
        if name not in found:
            raise _damaged(f"{name} is missing")
        if found[name] != expected:
            raise _damaged(f"{name} does not match its checksum")
    # Every byte before the manifest (headers and padding too), then the bytes after it.
    manifest_header = order[-2].offset
    if manifest_header != manifest.get("prefix_bytes"):
        raise _damaged("the members do not end where the manifest begins")
    source.seek(0)
    sha, left = hashlib.sha256(), manifest_header
    while left:
        chunk = source.read(min(_CHUNK, left))
        if not chunk:
            raise _damaged("it ends early")
        sha.update(chunk)
        left -= len(chunk)
    if sha.hexdigest() != manifest.get("prefix_sha256"):
        raise _damaged("a header or the padding between members changed")
    position = manifest_header
    for member in order[-2:]:
        if member.offset != position:
            raise _damaged("the manifest's members are not where they belong")
        source.seek(member.offset)
        header = source.read(member.offset_data - member.offset)
        if header != member.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"):
            raise _damaged(f"the header of {member.name} changed")
        after = member.offset_data + member.size
        position = member.offset_data + _padded(member.size)
        _zeros(source, after, position)
    if end - position < 2 * _BLOCK:
        raise _damaged("its end-of-archive blocks are missing")
    _zeros(source, position, end)
    return manifest


def _padded(size: int) -> int:
    return (size + _BLOCK - 1) // _BLOCK * _BLOCK


def _zeros(source, start: int, stop: int) -> None:
    source.seek(start)
    left = stop - start
    while left:
        chunk = source.read(min(_CHUNK, left))
        if not chunk:
            raise _damaged("it ends early")
        if chunk.count(0) != len(chunk):
            raise _damaged("bytes after its last member changed")
        left -= len(chunk)


def _safe(name: str) -> bool:
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or "\\" in name or "\x00" in name:
        return False
    if name in (MANIFEST, SEAL, DATABASE):
        return True
    parts = pure.parts
    return len(parts) >= 3 and parts[0] in ("entities", "shared") and ":" not in parts[1]


def _extract(source, target: Path, manifest: dict) -> None:
    """The second pass: write each member, 0600 in 0700 folders, checked again."""
    ensure_private_dir(target)
    listed = {m["path"]: m["sha256"] for m in manifest["members"]}
    source.seek(0)
    with tarfile.open(fileobj=source, mode="r:") as tar:
        for member in tar:
            if member.name in (MANIFEST, SEAL):
                continue
            relative = "pps.sqlite3" if member.name == DATABASE else member.name
            path = target / relative
            ensure_private_dir(path.parent)
            handle = tar.extractfile(member)
            sha = hashlib.sha256()
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            with os.fdopen(fd, "wb") as out:
                while chunk := handle.read(_CHUNK):
                    sha.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            if sha.hexdigest() != listed.get(member.name):
                raise _damaged(f"{member.name} changed between the check and the write")
            if member.mtime:
                os.utime(path, (member.mtime, member.mtime))
