"""The search index of each entity, kept in step with its files and its raw turns.

The index is a cache: `search_files` remembers each file as indexed (size, mtime, hash),
its chunks and their vectors are kept by engine/search/chunk_store.py, which `Index`
stands on. A file is re-read when its size or mtime changes and re-indexed when its hash
does; a file gone from disk leaves the index. Vectors are reused for chunks whose
embedded text did not change (an edited file, a renamed one), so an edit costs one
embedding per changed chunk; without the model, chunks are stored without vectors (BM25
still finds them) and get them later.

A file with more than `_INLINE_EMBED_MAX` chunks to embed (a long document, a 20 MB
dump) is not embedded while it is indexed: its chunks are stored at once (found by
their words), and the `embed_files` queue job embeds them a slice at a time, each slice
committed, then goes to the back of the queue, so that a restart resumes where it was
and other entities' files are embedded in between. What the keeper finds without vectors
at start and at each rescan goes the same way (`embed_later`): it never embeds one
entity's backlog while other homes wait to be indexed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import PurePosixPath

from pydantic import BaseModel, Field

from engine.capture import entities
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.search import chunks, embeddings, homes, vectors
from engine.search.chunk_store import ChunkStore, Progress, content_hash, embed_hash
from engine.search.homes import Home, SkippedFile, Source
from engine.store import queue
from engine.store.db import Database

log = logging.getLogger("pps.index")

_DATE_IN_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})")
_INLINE_EMBED_MAX = 64  # chunks a file may have to embed while it is indexed
_WRITE_SLICE = 256  # chunks one write transaction stores: a big file's take several
_CONTEXT_TOKENS = 32  # of the model's length, kept for a chunk's title and headings
FILE_EMBED_JOB = "embed_files"


class NotText(Exception):
    """A file of the home whose bytes are not text (homes.text_problem): not indexed."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem


@dataclass
class SyncReport:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0
    errors: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)

    def count(self, outcome: str) -> None:
        if outcome in ("added", "updated", "removed", "unchanged"):
            setattr(self, outcome, getattr(self, outcome) + 1)


class IndexStats(BaseModel):
    """What the entity's index holds, for GET /v1/search/index."""

    files: int = Field(description="Files of the home indexed.")
    chunks: int = Field(description="Ranked pieces: file chunks and turns.")
    vectors: int = Field(description="Chunks embedded with the current model.")
    model: str
    approximate_index: str = Field(
        description="off, below_threshold, building, or ready (serving the dense side)."
    )
    skipped: list[SkippedFile] = Field(
        description="Files of the home not indexed, and why (a name that is not UTF-8,"
        " too big, bytes that are not text)."
    )


class Index(ChunkStore):
    """The index over every entity's home and turns, with the vectors held in memory.
    One per process; shared by request threads, workers and the file watcher."""

    def __init__(self, settings: Settings, db: Database):
        super().__init__(settings, db)
        self._skipped: dict[str, dict[str, str]] = {}  # entity -> path shown -> problem
        self._skipped_lock = threading.Lock()
        self._file_locks: dict[tuple[str, str], threading.RLock] = {}
        self._files_lock = threading.Lock()

    def home(self, entity: str) -> Home:
        return homes.home_for(self.settings, entity)

    # --- files -----------------------------------------------------------------------

    def sync_entity(
        self, entity: str, progress: Progress | None = None, rebuild: bool = False
    ) -> SyncReport:
        """Bring the entity's file chunks in step with its home: new and changed files
        indexed, files gone removed. `rebuild` re-reads every file."""
        home = self.home(entity)
        report = SyncReport()
        on_disk = {source.path: source for source, _ in home.sources(skipped=report.skipped)}
        indexed = {
            row["path"]
            for row in self.db.conn.execute(
                "SELECT path FROM search_files WHERE entity = ?", (entity,)
            )
        }
        total, done = len(on_disk) + len(indexed - on_disk.keys()), 0
        # New and changed files first, so a renamed file finds its old vectors to reuse.
        for path, source in on_disk.items():
            try:
                outcome, embedded = self._sync_source(home, source, force=rebuild)
                report.count(outcome)
                report.embedded += embedded
            except NotText as exc:
                report.skipped.append(SkippedFile(path=path, problem=exc.problem))
            except OSError as exc:
                report.errors.append(f"{path}: {exc}")
            done += 1
            if progress:
                progress(done, total)
        self._skipping(entity, report.skipped)
        for path in indexed - on_disk.keys():
            report.count(self.remove_file(entity, path))
            done += 1
            if progress:
                progress(done, total)
        return report

    def sync_file(self, entity: str, relative: str) -> str:
        """Index one file of the home (or drop it from the index if it is gone or not a
        file the index holds). Returns added, updated, removed, unchanged or ignored."""
        home = self.home(entity)
        relative = PurePosixPath(relative).as_posix()
        source = home.classify(relative)
        full = home.path(relative)
        there = source is not None and full.is_file() and home.inside(full)
        problem = home.problem(relative, full.stat() if there else None)
        name = homes.shown(relative)
        if problem is None and there and source is not None:
            try:
                outcome = self._sync_source(home, source)[0]
            except FileNotFoundError:
                return self.remove_file(entity, relative)
            except NotText as exc:
                problem = exc.problem
            else:
                self._skipping(entity, [], scope=name)  # skipped before, it is indexed now
                return outcome
        if problem is not None:  # not indexed: its name, its size, or not text
            found = [SkippedFile(path=name, problem=problem)] if there else []
            self._skipping(entity, found, scope=name)
            if homes.name_problem(relative) is None:
                self.remove_file(entity, relative)  # it may have been indexed before
            return "skipped" if there else "ignored"
        return self.remove_file(entity, relative) if source is not None else "ignored"

    def sync_dir(self, entity: str, relative: str) -> SyncReport:
        """Re-check every indexed file under a folder and every file now in it (a folder
        was moved or deleted)."""
        report = SyncReport()
        prefix = relative.rstrip("/") + "/"
        rows = []
        if homes.name_problem(prefix) is None:  # under such a name, nothing was indexed
            rows = self.db.conn.execute(
                "SELECT path FROM search_files WHERE entity = ? AND substr(path, 1, ?) = ?",
                (entity, len(prefix), prefix),
            ).fetchall()
        paths = {row["path"] for row in rows}
        home = self.home(entity)
        under = relative.rstrip("/")
        paths |= {s.path for s, _ in home.sources(under=under, skipped=report.skipped)}
        self._skipping(entity, report.skipped, scope=homes.shown(under))
        for path in sorted(paths):
            report.count(self.sync_file(entity, path))
        return report

    def skipped(self, entity: str | None = None) -> list[SkippedFile]:
        """Files of the entity's home (or of every home) found but not indexed, and why."""
        with self._skipped_lock:
            chosen = [entity] if entity is not None else list(self._skipped)
            return [
                SkippedFile(path=path, problem=problem)
                for name in chosen
                for path, problem in sorted(self._skipped.get(name, {}).items())
            ]

    def _skipping(self, entity: str, found: list[SkippedFile], scope: str | None = None) -> None:
        """Remember what a look at the home (or at the file or folder `scope` in it) found
        not indexable, forgetting what is no longer there; each file is logged once, not
        at every rescan."""
        with self._skipped_lock:
            known = self._skipped.setdefault(entity, {})
            gone = {
                path
                for path in known
                if scope is None or path == scope or path.startswith(scope + "/")
            }
            for skipped in found:
                gone.discard(skipped.path)
                if skipped.path not in known:
                    log.warning("not indexing %s of %s: %s", skipped.path, entity, skipped.problem)
                known[skipped.path] = skipped.problem
            for path in gone:
                del known[path]

    def _empty_file(self, entity: str, file_id: int) -> None:
        """Drop a big file's old chunks a slice a transaction (so that no other write
        waits long for this one), its row marked unindexed first (size -1): a restart
        meanwhile indexes it again."""
        with self.db.write() as conn:
            conn.execute("UPDATE search_files SET size = -1, sha256 = '' WHERE id = ?", (file_id,))
        while True:
            with self._applying(entity) as apply, self.db.write() as conn:
                removed = self._drop_file_chunks(conn, file_id, _WRITE_SLICE)
                apply([], [], [], [], removed)
            if len(removed) < _WRITE_SLICE:
                return

    def _new_file_row(self, conn, apply, entity: str, source: Source, current) -> int:
        """The file's row made anew (its old chunks and vectors gone), unindexed (size -1)
        until its last chunk is stored."""
        if current is not None:
            apply([], [], [], [], self._drop_file_chunks(conn, current["id"]))
            conn.execute("DELETE FROM search_files WHERE id = ?", (current["id"],))
        return conn.execute(
            "INSERT INTO search_files (entity, path, size, mtime_ns, sha256, indexed_at)"
            " VALUES (?, ?, -1, 0, '', ?) RETURNING id",
            (entity, source.path, timestamps.now()),
        ).fetchone()[0]

    @contextmanager
    def _indexing(self, entity: str, relative: str) -> Iterator[None]:
        """One thread at a time indexes (or removes) a given file: a big file is written
        in several transactions, which another indexer of it must not interleave with."""
        with self._files_lock:
            lock = self._file_locks.setdefault((entity, relative), threading.RLock())
        with lock:
            yield

    def remove_file(self, entity: str, relative: str) -> str:
        with (
            self._indexing(entity, relative),
            self._applying(entity) as apply,
            self.db.write() as conn,
        ):
            row = conn.execute(
                "SELECT id FROM search_files WHERE entity = ? AND path = ?", (entity, relative)
            ).fetchone()
            if row is None:
                return "ignored"
            apply([], [], [], [], self._drop_file_chunks(conn, row["id"]))
            conn.execute("DELETE FROM search_files WHERE id = ?", (row["id"],))
        return "removed"

    def _sync_source(self, home: Home, source: Source, force: bool = False) -> tuple[str, int]:
        """Index one file if it changed: (outcome, how many chunks were embedded)."""
        full = home.path(source.path)
        stat = full.stat()
        known = self.db.conn.execute(
            "SELECT id, size, mtime_ns, sha256 FROM search_files WHERE entity = ? AND path = ?",
            (home.entity, source.path),
        ).fetchone()
        if (
            not force
            and known is not None
            and (known["size"], known["mtime_ns"]) == (stat.st_size, stat.st_mtime_ns)
        ):
            return "unchanged", 0
        raw = full.read_bytes()
        problem = homes.text_problem(raw)
        if problem is not None:
            self.remove_file(home.entity, source.path)  # it may have been text before
            raise NotText(problem)
        digest = hashlib.sha256(raw).hexdigest()
        if not force and known is not None and known["sha256"] == digest:
            with self.db.write() as conn:
                conn.execute(
                    "UPDATE search_files SET size = ?, mtime_ns = ? WHERE id = ?",
                    (stat.st_size, stat.st_mtime_ns, known["id"]),
                )
            return "unchanged", 0
        rows = self._chunk_rows(home.entity, source, raw.decode("utf-8", errors="replace"))
        reused = self._reusable_vectors(home.entity, [r["embed_hash"] for r in rows])
        deferred = len({r["embed_hash"] for r in rows} - reused.keys()) > _INLINE_EMBED_MAX
        fresh = {} if deferred else self._embed_new(rows, reused)
        with self._indexing(home.entity, source.path):
            current = self.db.conn.execute(
                "SELECT id, sha256 FROM search_files WHERE entity = ? AND path = ?",
                (home.entity, source.path),
            ).fetchone()
            if current is not None and current["sha256"] == digest and not force:
                return "unchanged", 0  # another thread indexed this very content meanwhile
            if current is not None and len(rows) > _WRITE_SLICE:
                self._empty_file(home.entity, current["id"])
            file_id = None
            for begin in range(0, max(len(rows), 1), _WRITE_SLICE):
                with self._applying(home.entity) as apply, self.db.write() as conn:
                    if file_id is None:  # with the first chunks: a small file changes at once
                        file_id = self._new_file_row(conn, apply, home.entity, source, current)
                    ids, vecs = [], []
                    for row in rows[begin : begin + _WRITE_SLICE]:
                        chunk_id = _insert_chunk(conn, {**row, "file_id": file_id})
                        vector = reused.get(row["embed_hash"])
                        if vector is None:
                            vector = fresh.get(row["embed_hash"])
                        if vector is not None:
                            ids.append(chunk_id)
                            vecs.append(vector)
                    self._store_vectors(conn, home.entity, ids, vecs)
                    tier = vectors.TIER_CODES[source.tier]
                    apply(ids, vecs, [tier] * len(ids), [source.growth] * len(ids), [])
                    if begin + _WRITE_SLICE >= len(rows):  # the last slice: the file is whole
                        conn.execute(
                            "UPDATE search_files SET size = ?, mtime_ns = ?, sha256 = ?,"
                            " indexed_at = ? WHERE id = ?",
                            (stat.st_size, stat.st_mtime_ns, digest, timestamps.now(), file_id),
                        )
                        if deferred and not queue.queued(conn, home.entity, FILE_EMBED_JOB):
                            key = f"{file_id}:{digest[:16]}"
                            queue.enqueue(conn, home.entity, FILE_EMBED_JOB, key, {})
        return ("updated" if known is not None else "added"), len(fresh)

    def _chunk_rows(self, entity: str, source: Source, text: str) -> list[dict]:
        document = chunks.split(text, self._room())
        meta = document.meta
        name = PurePosixPath(source.path)
        title = str(meta.get("title") or "").strip() or _first_title(document) or name.stem
        day = chunks.meta_date(meta) or _date_in_name(name.name)
        tags = chunks.meta_tags(meta)
        category = source.category or _meta_category(meta)
        rows = []
        for chunk in document.chunks:
            trail = [h for h in chunk.headings if h != title]
            context = " > ".join([title, *trail])
            if tags:
                context += "\n" + " ".join(tags)
            rows.append(
                {
                    "entity": entity,
                    "tier": source.tier,
                    "kind": source.kind,
                    "event_id": None,
                    "start_line": chunk.start_line,
                    "end_line": chunk.end_line,
                    "category": category,
                    "tags": json.dumps(tags),
                    "date": f"{day}T00:00:00.000000Z" if day else None,
                    "channel": None,
                    "growth": int(source.growth),
                    "superseded": int(chunks.meta_flag(meta, "superseded")),
                    "content_hash": content_hash(chunk.text),
                    "embed_hash": embed_hash(source.kind, chunk.text, context),
                    "body": chunk.text,
                    "context": context,
                }
            )
        return rows

    def _room(self) -> chunks.Room:
        """A chunk's room: `chunk_max_chars`, and what the model reads of it after its
        title and headings (`_CONTEXT_TOKENS` of them), so no chunk's end goes unread."""
        try:
            embedder = self.embedder()
        except embeddings.Unavailable:
            embedder = None
        if embedder is None or embedder.max_tokens is None:
            return chunks.Room(self.settings.chunk_max_chars)
        tokens = embedder.max_tokens - _CONTEXT_TOKENS
        return chunks.Room(self.settings.chunk_max_chars, tokens, embedder.count, embedder.cut)

    # --- the backlog and the totals --------------------------------------------------

    def embed_later(self, entity: str) -> bool:
        """Hand the entity's chunks without a vector of the current model (files and
        turns) to the queue, a slice a job, unless a slice waits there already: the keeper
        never spends its time on one entity's backlog while other homes wait. Returns
        whether any chunk lacks its vector."""
        lacking = self.db.conn.execute(
            "SELECT 1 FROM search_chunks c WHERE c.entity = ? AND NOT EXISTS"
            " (SELECT 1 FROM search_vectors v WHERE v.chunk_id = c.id AND v.model = ?) LIMIT 1",
            (entity, self.model),
        ).fetchone()
        if lacking is None:
            return False
        with self.db.write() as conn:
            if not queue.queued(conn, entity, FILE_EMBED_JOB):
                key = f"missing-{timestamps.now()}"
                queue.enqueue(conn, entity, FILE_EMBED_JOB, key, {"turns": True})
        return True

    def stats(self, entity: str) -> IndexStats:
        def count(sql: str, *params) -> int:
            return self.db.conn.execute(sql, (entity, *params)).fetchone()[0]

        return IndexStats(
            files=count("SELECT COUNT(*) FROM search_files WHERE entity = ?"),
            chunks=count("SELECT COUNT(*) FROM search_chunks WHERE entity = ?"),
            vectors=count(
                "SELECT COUNT(*) FROM search_vectors WHERE entity = ? AND model = ?", self.model
            ),
            model=self.model,
            approximate_index=self.matrix(entity).index_state,
            skipped=self.skipped(entity),
        )

    def entities(self) -> list[str]:
        """The entities and shared stores (`shared:<store>`) the index keeps, by name."""
        return entities.index_keys(self.db)


def file_embed_handler(index: Index, slice_size: int = _INLINE_EMBED_MAX):
    """The `embed_files` job: one slice of an entity's file chunks (with `{"turns": true}`,
    of all its chunks) still without vectors; while more are left, a job after it at the
    back of the queue, unless one of the entity's waits there already: each entity has one
    chain of slices, however many files it changed, and entities take turns. No model:
    the job waits (BM25 ranks meanwhile), as embed_events."""

    def embed_slice(job: queue.Job) -> None:
        every = bool(job.payload.get("turns"))
        try:
            done = index.embed_missing(job.entity, files_only=not every, limit=slice_size)
        except embeddings.Unavailable as exc:
            raise queue.Pause(str(exc)) from exc
        if done == slice_size:
            with index.db.write() as conn:
                if not queue.queued(conn, job.entity, FILE_EMBED_JOB):  # one chain an entity
                    key = f"after-{job.id}"
                    queue.enqueue(conn, job.entity, FILE_EMBED_JOB, key, job.payload)

    return embed_slice


def _insert_chunk(conn: sqlite3.Connection, row: dict) -> int:
    columns = list(row)
    return conn.execute(
        f"INSERT INTO search_chunks ({', '.join(columns)})"
        f" VALUES ({', '.join('?' * len(columns))}) RETURNING id",
        [row[c] for c in columns],
    ).fetchone()[0]


def _first_title(document: chunks.Document) -> str | None:
    for chunk in document.chunks:
        if chunk.headings:
            return chunk.headings[0]
    return None


def _date_in_name(name: str) -> str | None:
    match = _DATE_IN_NAME.search(name)
    if not match:
        return None
    try:
        return date.fromisoformat(match[1]).isoformat()
    except ValueError:
        return None


def _meta_category(meta: dict) -> str | None:
    value = meta.get("category")
    if value is None:
        return None
    return str(value).strip().lower() or None


# Asked by contracts: deleting a shared store drops its index key's rows in the store's own
# transaction (engine/contracts/stores.py); the caller invalidates the vector cache after.


def drop_key(conn: sqlite3.Connection, key: str) -> None:
    """Delete every index row of a key: its vectors, chunks, files and generation."""
    conn.execute("DELETE FROM search_vectors WHERE entity = ?", (key,))
    conn.execute("DELETE FROM search_chunks WHERE entity = ?", (key,))
    conn.execute("DELETE FROM search_files WHERE entity = ?", (key,))
    conn.execute("DELETE FROM search_generations WHERE entity = ?", (key,))
