"""Keeping the index in step with the files while the server runs.

Files change behind our back: a person edits a word-photo, `git pull` rewrites a folder.
At start every entity's home is compared with the index (and raw turns captured before
the index held them are admitted); then a watcher (watchfiles: inotify and its kin)
reports changes within about a second, and each changed file or folder is re-checked;
an entity created while it runs has its home compared within about five seconds (its
files may be there already, and no watcher reports those).
A full comparison also runs every PPS_SEARCH_RESCAN_S seconds, for changes a watcher
can miss (an overflowing event queue, a network file system). Search itself never
trusts the index alone: it checks every excerpt against the file before returning it.
A watcher that fails (watchfiles cannot name a file whose name is not UTF-8) starts
again after a full comparison; each failure is logged once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from engine.kernel.files import ensure_private_dir
from engine.search import embeddings, homes, turns
from engine.search.index import Index, SyncReport

log = logging.getLogger("pps.watch")

_DEBOUNCE_MS = 300
_WATCH_RETRY_S = 1.0
_WATCH_FAILURES = 3
"""Failures in a row, without a change or a quiet interval reported between them, after
which the watcher gives way to rescans alone."""


class Keeper:
    """The background thread that syncs at start, follows changes, and rescans."""

    def __init__(self, index: Index):
        self.index = index
        self.settings = index.settings
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()  # set once the start-up sync has run
        self.syncs = 0  # full comparisons done (at start, after a failed watcher, rescans)
        self._known: set[str] = set()  # entities whose homes were compared
        self.ticks = 0  # reports of the watcher: changes, or a quiet interval

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="search-keeper", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def sync_all(self) -> None:
        """Every entity: turns admitted, files compared, missing vectors handed to the
        queue (a slice a job, entities taking turns), so that no home waits for another
        home's backlog to be embedded."""
        self._sync(self.index.entities(), lambda entity: sync(self.index, entity, later=True))
        self.syncs += 1

    def sync_new(self) -> None:
        """Entities created since the last comparison (`pps entity create` beside the
        running server): their homes may hold files already, which no watcher reports.
        Their files only, as a change is indexed (a long file's vectors go to the queue)."""
        new = [e for e in self.index.entities() if e not in self._known]
        self._sync(new, self.index.sync_entity)

    def _sync(self, names: list[str], how: Callable[[str], SyncReport]) -> None:
        for entity in names:
            if self._stop.is_set():
                return
            self._known.add(entity)
            try:
                report = how(entity)
                for error in report.errors:
                    log.warning("indexing %s: %s", entity, error)
            except embeddings.Unavailable as exc:
                log.warning("search for %s ranks by BM25 only for now: %s", entity, exc)
            except Exception:
                log.exception("syncing the search index of %s failed", entity)

    def _run(self) -> None:
        self.sync_all()
        self.ready.set()
        if self.settings.search_watch:
            self._follow()
        while not self._stop.wait(self.settings.search_rescan_s):
            self.sync_all()

    def _follow(self) -> None:
        """Watch until stopped. A watcher that fails loses the changes it held: the homes
        are compared with the index again and a new watcher starts. Each distinct failure
        is logged once; one that keeps failing without reporting anything between gives
        way to rescans."""
        said: set[str] = set()
        failures = 0
        while not self._stop.is_set():
            ticks = self.ticks
            try:
                self._watch()
                return
            except Exception as exc:
                failures = failures + 1 if self.ticks == ticks else 1
                why = f"{type(exc).__name__}: {exc}"
                if failures >= _WATCH_FAILURES:
                    log.error(
                        "the file watcher keeps failing (%s); changes are found by rescans only",
                        why,
                    )
                    return
                if why not in said:
                    said.add(why)
                    log.warning("the file watcher failed (%s); it starts again", why)
            if self._stop.wait(_WATCH_RETRY_S):
                return
            self.sync_all()

    def _watch(self) -> None:
        from watchfiles import watch

        logging.getLogger("watchfiles.main").setLevel(logging.WARNING)  # not a line per change
        roots = self._roots()
        rescan_ms = int(self.settings.search_rescan_s * 1000)
        waited = 0.0
        for changes in watch(
            *roots,
            stop_event=self._stop,
            debounce=_DEBOUNCE_MS,
            rust_timeout=min(rescan_ms, 5000),
            yield_on_timeout=True,
            raise_interrupt=False,
        ):
            self.ticks += 1
            self.sync_new()
            if not changes:
                waited += min(rescan_ms, 5000) / 1000
                if waited >= self.settings.search_rescan_s:
                    waited = 0.0
                    self.sync_all()
                continue
            located = {self._locate(Path(p)) for _, p in changes}
            for entity, relative in sorted(place for place in located if place is not None):
                try:
                    self._sync_path(entity, relative)
                except Exception:
                    log.exception("re-indexing %s of %s failed", relative, entity)

    def _roots(self) -> list[Path]:
        roots = [ensure_private_dir(homes.entities_dir(self.settings)).absolute()]
        for entity, folder in self.settings.entity_homes.items():
            path = Path(folder).expanduser()
            if path.is_dir():
                roots.append(path.absolute())
            else:
                log.warning("the configured home of %s is not a folder: %s", entity, path)
        return roots

    def _locate(self, path: Path) -> tuple[str, str] | None:
        """(entity, path relative to its home) for a changed path, or None."""
        for entity, folder in self.settings.entity_homes.items():
            relative = _relative(path, Path(folder).expanduser())
            if relative is not None:
                return entity, "" if relative == "." else relative
        relative = _relative(path, homes.entities_dir(self.settings))
        if not relative or relative == ".":
            return None
        entity, _, rest = relative.partition("/")
        if entity in self.settings.entity_homes or entity not in self.index.entities():
            return None
        return entity, rest

    def _sync_path(self, entity: str, relative: str) -> None:
        """Re-check what changed: a file, a folder (its files may have been written
        before the watcher saw the folder), or the whole home."""
        full = self.index.home(entity).path(relative)
        if not relative:
            self.index.sync_entity(entity)
        elif full.is_dir() or not relative.endswith(homes.TEXT_SUFFIXES):
            self.index.sync_dir(entity, relative)
        else:
            self.index.sync_file(entity, relative)


def sync(
    index: Index,
    entity: str,
    rebuild: bool = False,
    re_embed: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    later: bool = False,
) -> SyncReport:
    """Bring one entity's index in step with its sources: turns captured before the index
    held them admitted, files compared with disk (`rebuild`: every file re-read), then
    vectors made for whatever lacks one of the current model (`re_embed`: for all; `later`:
    by the queue, in slices). Raises embeddings.Unavailable after the files are done if
    the model cannot load."""

    def stage(name: str):
        return (lambda done, total: progress(name, done, total)) if progress else None

    turns.backfill(index, entity)
    report = index.sync_entity(entity, progress=stage("files"), rebuild=rebuild)
    if re_embed:
        index.drop_vectors(entity)
    if later:
        index.embed_later(entity)
    else:
        report.embedded += index.embed_missing(entity, progress=stage("vectors"))
    return report


def _relative(path: Path, root: Path) -> str | None:
    for base in (root.absolute(), root.resolve()):
        try:
            return path.absolute().relative_to(base).as_posix()
        except ValueError:
            continue
    return None
