"""An entity's home: the folder its memory files live in, what each file there is, and
how a path a caller names is resolved without leaving it.

The files are the memory; the index is a cache of them. A home is
`<data dir>/entities/<entity>/` unless the settings map the entity to an existing folder
(an agent's own git-backed notes). In it:

    word_photos/*.md                                   anchors        shortform
    .brain/fragments/<category>/<YYYY-MM>/<date>_<slug>.md   fragments  shortform
    MEMORY.md, memory/**/*.md                          memory files   shortform
    <each domain collection>/**/*.md                   documents      domain
    <each growth collection>/**/*.md                   journals       domain, on request

Paths from callers are relative to the home. Absolute paths and `..` are refused, and a
path is resolved (symlinks followed) and refused if it lands outside the home. A file
whose name is not valid UTF-8 cannot be stored or shown by its name, and a file whose
bytes are not text (NUL bytes, or more than a small share that is not valid UTF-8: an
image or an archive named `.md`) would index as replacement characters: both are
skipped, and `sources` says so. A file that is text again is indexed again.
"""

from __future__ import annotations

import codecs
import errno
import functools
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from string import ascii_letters

from pydantic import BaseModel, ConfigDict, Field

from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.kernel.errors import InputError, NotFound
from engine.kernel.files import ensure_private_dir, write_private
from engine.kernel.limits import MAX_READ_LINES

WORD_PHOTOS = "word_photos"
FRAGMENTS = ".brain/fragments"
MEMORY_FILE = "MEMORY.md"
MEMORY_DIR = "memory"
TEXT_SUFFIXES = (".md", ".markdown", ".txt")
SNIFF_BYTES = 8192
"""What `sources` reads of each file to tell text from binary; the indexer reads it whole."""
MOST_NOT_UTF8 = 0.05
"""The share of a file's characters that may come from bytes that are not valid UTF-8
(a stray Latin-1 letter) before it is not text."""


@dataclass(frozen=True)
class Source:
    """What one file in a home is, for the index."""

    path: str  # relative to the home, '/'-separated
    tier: str  # shortform | domain
    kind: str  # anchor | fragment | memory | document | journal
    growth: bool = False
    category: str | None = None


class SkippedFile(BaseModel):
    """A file of the home the index does not hold, and why."""

    path: str = Field(description="Relative to the home; bytes that are not UTF-8 as \\xNN.")
    problem: str


NAME_NOT_UTF8 = "its name is not valid UTF-8: rename it to have it indexed"
NOT_TEXT = "not text (it holds NUL bytes: a binary file?): it is not indexed"
_REPLACEMENT = "\ufffd".encode()  # U+FFFD written in the file itself is text


def text_problem(data: bytes, whole: bool = True) -> str | None:
    """Why these bytes of a file are not text to index, or None. `whole`: the file's
    every byte (else its first bytes, which may end inside a character)."""
    if b"\x00" in data:
        return NOT_TEXT
    decoded = codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=whole)
    bad = decoded.count("\ufffd") - data.count(_REPLACEMENT)
    if bad > MOST_NOT_UTF8 * max(len(decoded), 1):
        return (
            f"not UTF-8 text ({bad / max(len(decoded), 1):.0%} of it is not valid UTF-8: a"
            " binary file, or another encoding): save it as UTF-8 to have it indexed"
        )
    return None


@functools.lru_cache(maxsize=65536)
def _sniffed(path: str, size: int, mtime_ns: int) -> str | None:
    """`text_problem` of a file's first SNIFF_BYTES, remembered while its size and mtime
    stay (a rescan reads no file twice)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return None  # unreadable: indexing it says why
    return text_problem(head, whole=size <= len(head))


def name_problem(relative: str) -> str | None:
    """Why a file cannot be indexed under its name, or None. Python gives the bytes of a
    name that is not UTF-8 as surrogates, which the database and JSON refuse."""
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        return NAME_NOT_UTF8
    return None


def shown(relative: str) -> str:
    """A name as text: bytes that are not UTF-8 as \\xNN."""
    try:
        raw = relative.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return relative.encode("utf-8", "backslashreplace").decode("ascii")
    return raw.decode("utf-8", "backslashreplace")


@dataclass(frozen=True)
class Home:
    entity: str
    root: Path
    domain: tuple[str, ...] = ()
    growth: tuple[str, ...] = ()
    max_file_bytes: int | None = None  # a larger file is skipped (PPS_SEARCH_MAX_FILE_BYTES)

    def path(self, relative: str) -> Path:
        """The file for a relative path, for writing our own files (names we made)."""
        return self.root / relative

    def classify(self, relative: str) -> Source | None:
        """What the file at `relative` is, or None if the index does not hold such files."""
        parts = PurePosixPath(relative).parts
        if not parts or not relative.endswith(TEXT_SUFFIXES):
            return None
        if any(part.startswith(".") for part in parts) and not relative.startswith(FRAGMENTS):
            return None
        if parts[0] == WORD_PHOTOS:
            return Source(relative, "shortform", "anchor")
        if relative.startswith(FRAGMENTS + "/"):
            inner = parts[2:]
            if any(part.startswith(".") for part in inner):
                return None
            category = inner[0] if len(inner) > 1 else None
            return Source(relative, "shortform", "fragment", category=category)
        if relative == MEMORY_FILE or parts[0] == MEMORY_DIR:
            return Source(relative, "shortform", "memory")
        for folder in self.growth:
            if _under(parts, folder):
                return Source(relative, "domain", "journal", growth=True)
        for folder in self.domain:
            if _under(parts, folder):
                return Source(relative, "domain", "document")
        return None

    def sources(
        self, under: str | None = None, skipped: list[SkippedFile] | None = None
    ) -> Iterator[tuple[Source, os.stat_result]]:
        """Every indexable file in the home (or in its folder `under`), with its stat,
        never leaving the home. A file that would be indexed but for its name is added to
        `skipped` instead."""
        tops = [WORD_PHOTOS, FRAGMENTS, MEMORY_DIR, *self.domain, *self.growth]
        if under is not None:
            tops = [under]
        elif (self.root / MEMORY_FILE).is_file() and self.inside(self.root / MEMORY_FILE):
            memory = self.classify(MEMORY_FILE)
            assert memory is not None  # MEMORY.md is always the memory file
            yield memory, (self.root / MEMORY_FILE).stat()
        seen: set[str] = set()
        for top in tops:
            folder = self.root / top
            if not folder.is_dir() or not self.inside(folder):
                continue
            for directory, dirs, files in os.walk(folder):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    full = Path(directory) / name
                    relative = full.relative_to(self.root).as_posix()
                    source = self.classify(relative)
                    if source is None or relative in seen or not full.is_file():
                        continue
                    if full.is_symlink() and not self.inside(full):
                        continue
                    seen.add(relative)
                    stat = full.stat()
                    problem = self.problem(relative, stat)
                    if problem is not None:
                        if skipped is not None:
                            skipped.append(SkippedFile(path=shown(relative), problem=problem))
                        continue
                    yield source, stat

    def problem(self, relative: str, stat: os.stat_result | None) -> str | None:
        """Why a file that would be indexed is not: its name, its size, or its first
        bytes not being text (the indexer checks the rest). `stat`: the file's, or None
        when there is no such file."""
        problem = name_problem(relative)
        if problem is not None or stat is None:
            return problem
        size, limit = stat.st_size, self.max_file_bytes
        if limit is not None and size > limit:
            return (
                f"{size / 1e6:.1f} MB, over PPS_SEARCH_MAX_FILE_BYTES ({limit / 1e6:.1f} MB):"
                " split it, or raise the setting"
            )
        return _sniffed(str(self.path(relative)), size, stat.st_mtime_ns)

    def text_problem(self, relative: str) -> str | None:
        """`text_problem` of the whole file (None if it cannot be read: that is another
        problem)."""
        try:
            return text_problem(self.path(relative).read_bytes())
        except OSError:
            return None

    def inside(self, path: Path) -> bool:
        """Whether `path`, symlinks followed, is in the home."""
        try:
            return path.resolve().is_relative_to(self.root.resolve())
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop, before Python 3.13
            return False

    def resolve(self, relative: str, field: str = "path") -> Path:
        """A caller's path as a file inside the home; InputError if it may not be read
        from here, NotFound if there is no such file."""
        if not relative or not relative.strip():
            raise InputError.of(field, "empty; give a path relative to your home")
        if "\x00" in relative:
            raise InputError.of(field, "contains a NUL character")
        pure = PurePosixPath(relative.replace("\\", "/"))
        if pure.is_absolute() or relative.startswith("~") or _has_drive(relative):
            raise InputError.of(
                field, "absolute paths are refused; give a path relative to your home"
            )
        if ".." in pure.parts:
            raise InputError.of(field, "'..' is refused; give a path inside your home")
        candidate = self.root / pure
        try:
            real = candidate.resolve()
            found = real.is_file()
        except (OSError, RuntimeError) as exc:
            if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
                # No file can have that name: as with any name that is not there.
                problem = f"no file {relative!r} in your home: {_unreadable(exc)}"
                raise NotFound(problem, field) from None
            raise InputError.of(field, _unreadable(exc)) from None
        if not real.is_relative_to(self.root.resolve()):
            raise InputError.of(field, "resolves outside your home (a symlink that leaves it)")
        if not found:
            raise NotFound(f"no file {relative!r} in your home")
        if not candidate.name.endswith(TEXT_SUFFIXES):
            raise InputError.of(field, f"only text files can be read ({', '.join(TEXT_SUFFIXES)})")
        return candidate

    def relative(self, path: Path) -> str | None:
        """The home-relative name of an absolute path in the home (not resolving symlinks
        in the last part, so a watched link is named as the link), or None."""
        try:
            return path.absolute().relative_to(self.root.absolute()).as_posix()
        except ValueError:
            try:
                return path.absolute().relative_to(self.root.resolve()).as_posix()
            except ValueError:
                return None


def write_new(home: Home, folder: str, stem: str, text: str) -> str:
    """Write a new file `<folder>/<stem>.md` (or `<stem>_2.md`, ... if taken) in the home,
    0600, complete before it appears under its name. Returns its relative path."""
    parts = PurePosixPath(folder).parts
    for depth in range(1, len(parts) + 1):
        current = home.root.joinpath(*parts[:depth])
        if (current.exists() or current.is_symlink()) and not home.inside(current):
            raise InputError.of("path", f"{folder} is a symlink out of the home, or a loop")
        if not current.exists():
            ensure_private_dir(current)
    directory = home.root.joinpath(*parts)
    temporary = directory / f".{stem}.{uuid.uuid4().hex}.tmp"
    write_private(temporary, text)
    try:
        for n in range(1, 1000):
            name = f"{stem}.md" if n == 1 else f"{stem}_{n}.md"
            try:
                os.link(temporary, directory / name)
            except FileExistsError:
                continue
            except OSError:  # no hard links here (some network and FUSE file systems)
                try:
                    write_private(directory / name, text)
                except FileExistsError:
                    continue
            return f"{PurePosixPath(folder).as_posix()}/{name}"
        raise InputError.of("path", f"too many files named {stem} in {folder}")
    finally:
        temporary.unlink(missing_ok=True)


def replace_file(home: Home, relative: str, text: str) -> None:
    """Replace a file of the home whole with `text` (0600): written beside it, then
    renamed over it, so a reader sees the old text or the new, never half of one."""
    target = home.resolve(relative)
    temporary = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
    write_private(temporary, text)
    try:
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


class HomeFile(BaseModel):
    path: str = Field(description="Relative to the home.")
    kind: str = Field(description="anchor, fragment, memory, document or journal.")
    category: str | None = None
    bytes: int
    modified_at: str


def list_files(home: Home, kind: str | None = None) -> list[HomeFile]:
    """The home's memory files (what the index holds), newest first; `kind` to keep one."""
    found = [
        HomeFile(
            path=source.path,
            kind=source.kind,
            category=source.category,
            bytes=stat.st_size,
            modified_at=timestamps.normalise(stat.st_mtime),
        )
        for source, stat in home.sources()
        if kind is None or source.kind == kind
    ]
    return sorted(found, key=lambda f: f.modified_at, reverse=True)


SHARED_KEY = "shared:"
"""The index key of a shared store is `shared:<store>`: no entity name holds a ':'."""


def store_key(store: str) -> str:
    return SHARED_KEY + store


def home_for(settings: Settings, entity: str) -> Home:
    """The entity's home, created (0700) if it is the default one; for a shared store's
    key, the store's folder `<data dir>/shared/<store>/` (fragments only)."""
    if entity.startswith(SHARED_KEY):
        store = entity.removeprefix(SHARED_KEY)
        return Home(entity, ensure_private_dir(shared_dir(settings) / store).absolute())
    configured = settings.entity_homes.get(entity)
    collections = tuple(settings.domain_collections), tuple(settings.growth_collections)
    if configured is not None:
        root = Path(configured).expanduser()
        if not root.is_dir():
            raise NotFound(f"the configured home of {entity!r} is not a folder: {root}")
    else:
        root = ensure_private_dir(entities_dir(settings) / entity)
    return Home(entity, root.absolute(), *collections, settings.search_max_file_bytes)


def entities_dir(settings: Settings) -> Path:
    return settings.data_dir / "entities"


def shared_dir(settings: Settings) -> Path:
    return settings.data_dir / "shared"


class FileLines(BaseModel):
    """Lines of a file in the home; `from` and `to` are 1-based and inclusive."""

    model_config = ConfigDict(populate_by_name=True)

    path: str
    start: int = Field(alias="from")
    to: int
    total_lines: int
    text: str


def read_lines(home: Home, relative: str, start: int = 1, count: int | None = None) -> FileLines:
    """memory_get: `count` lines (default: up to MAX_READ_LINES) of a home file from line
    `start`. Past the end there are no lines, and `to` is `from` - 1."""
    path = home.resolve(relative)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:  # not ours to read (its mode), or gone bad on the disk
        raise InputError.of("path", _unreadable(exc)) from None
    chosen = lines[start - 1 : start - 1 + (MAX_READ_LINES if count is None else count)]
    return FileLines(
        path=PurePosixPath(relative.replace("\\", "/")).as_posix(),
        start=start,
        to=start + len(chosen) - 1,
        total_lines=len(lines),
        text="\n".join(chosen),
    )


def _unreadable(exc: OSError | RuntimeError) -> str:
    """Why a path the file system refused to resolve can not be read, in words."""
    if isinstance(exc, RuntimeError) or exc.errno == errno.ELOOP:
        return "a symlink loop; it leads nowhere"
    if exc.errno == errno.ENAMETOOLONG:
        return "too long for the file system (a name in it, or the whole path)"
    return f"can not be read: {exc.strerror or exc}"


def _under(parts: tuple[str, ...], folder: str) -> bool:
    prefix = PurePosixPath(folder).parts
    return len(parts) > len(prefix) and parts[: len(prefix)] == prefix


def _has_drive(relative: str) -> bool:
    """`C:...`: a Windows drive, a letter A-Z (any other character and ':' name a file)."""
    return len(relative) > 1 and relative[1] == ":" and relative[0] in ascii_letters
