"""`pps restore`: an archive of `pps backup` written into an empty data dir, after a
check of every byte.

A restore reads the archive twice: first it checks everything (each member against the
manifest, no member missing or extra, the bytes between members, the manifest against
its seal), then it writes. A wrong passphrase or key, a flipped byte, a missing or an
extra member: refused, and nothing is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ValidationError

from engine.backup.archive import CHUNK, DATABASE, FORMAT, MANIFEST, SEAL, WRAPPED, BackupError
from engine.kernel.files import ensure_private_dir
from engine.store.db import MIGRATIONS_DIR, migrations

_BLOCK = tarfile.BLOCKSIZE
_AGE_MAGIC = b"age-encryption.org/v1\n"


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
class Restored:
    data_dir: Path
    manifest: dict
    notes: list[str] = field(default_factory=list)


def kind(archive: Path) -> str:
    """`plain`, `passphrase` or `recipient`: how an archive is wrapped (age's header
    names its recipients' kind)."""
    with open(archive, "rb") as handle:
        head = handle.read(4096)
    if head.startswith(WRAPPED):
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

    handle.readline()  # WRAPPED
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
                assert handle is not None  # a plain file: checked above
                sha = hashlib.sha256()
                while chunk := handle.read(CHUNK):
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
        named = manifest.get("format") if isinstance(manifest, dict) else None
        raise BackupError(f"not a {FORMAT} archive (format {named!r})")
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
        chunk = source.read(min(CHUNK, left))
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
        chunk = source.read(min(CHUNK, left))
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
            if handle is None:  # a plain file in the check: the archive changed since
                raise _damaged(f"{member.name} changed between the check and the write")
            sha = hashlib.sha256()
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            with os.fdopen(fd, "wb") as out:
                while chunk := handle.read(CHUNK):
                    sha.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            if sha.hexdigest() != listed.get(member.name):
                raise _damaged(f"{member.name} changed between the check and the write")
            if member.mtime:
                os.utime(path, (member.mtime, member.mtime))
