"""Each entity's vectors in memory, for brute-force cosine search.

The vectors live in SQLite (`search_vectors`, float32 blobs, each with its model); a
search needs them as one matrix. The matrix of an entity is loaded on its first search
and then kept in step: a write in this process changes it in place (inside the write
transaction, so writes apply in commit order), and every write bumps the entity's
generation in the database, so a write from another process (`pps reindex` while the
server runs) is noticed by the next search, which loads the matrix again.

Nearest rows: brute force over float32 (exact; about 15 ms at 100k rows here) until the
entity passes `search_ann_min_rows`; then an approximate index (engine/ann.py) is built
in a background thread and, once ready, proposes the candidates, which are re-scored
exactly from the matrix. See bench/search_scale.py.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence

import numpy as np

from engine.search import ann

log = logging.getLogger("pps.vectors")
TIER_CODES = {"shortform": 0, "longform": 1, "domain": 2}


class Matrix:
    """One entity's vectors: rows, their chunk ids, tier and growth flags, and which rows
    are still alive. Removal marks a row dead; the matrix is compacted when a quarter of
    it is dead. Appends grow the capacity geometrically. Past `ann_min_rows` alive rows
    (0: never) an approximate index is kept beside it (see `nearest`)."""

    def __init__(self, dim: int | None = None, ann_min_rows: int = 0):
        self.dim = dim
        self.lock = threading.RLock()  # writes, and the approximate index
        self.ann: ann.Approximate | None = None
        self.ann_min_rows = ann_min_rows
        self._building = False
        self._built_upto = 0  # rows the index being built has copied
        self._stale_in_build = 0
        self._layout = 0  # bumped when compaction moves rows
        self.n = 0
        self.dead = 0
        self.ids = np.zeros(0, dtype=np.int64)
        self.rows = np.zeros((0, dim or 0), dtype=np.float32)
        self.tiers = np.zeros(0, dtype=np.int8)
        self.growth = np.zeros(0, dtype=bool)
        self.alive = np.zeros(0, dtype=bool)
        self.where: dict[int, int] = {}

    def __len__(self) -> int:
        return self.n - self.dead

    def add(self, ids: Sequence[int], rows: np.ndarray, tiers: Sequence[int], growth) -> None:
        if not len(ids):
            return
        with self.lock:
            self._add(ids, rows, tiers, growth)
            if self.ann is not None:
                self.ann.add(np.asarray(ids), rows)
        self._keep_index()

    def _add(self, ids, rows, tiers, growth) -> None:
        self.remove(i for i in ids if i in self.where)
        if self.dim is None:
            self.dim = rows.shape[1]
            self.rows = np.zeros((0, self.dim), dtype=np.float32)
        need = self.n + len(ids)
        if need > len(self.ids):
            self._grow(max(need, 2 * len(self.ids), 1024))
        end = self.n + len(ids)
        self.ids[self.n : end] = ids
        self.rows[self.n : end] = rows
        self.tiers[self.n : end] = tiers
        self.growth[self.n : end] = growth
        self.alive[self.n : end] = True
        for offset, chunk_id in enumerate(ids):
            self.where[int(chunk_id)] = self.n + offset
        self.n = end

    def remove(self, ids: Iterable[int]) -> None:
        with self.lock:
            for chunk_id in ids:
                position = self.where.pop(int(chunk_id), None)
                if position is not None:
                    self.alive[position] = False
                    self.dead += 1
                    if self.ann is not None:
                        self.ann.stale += 1
                    if self._building and position < self._built_upto:
                        self._stale_in_build += 1
            if self.dead > 1024 and self.dead * 4 > self.n:
                self._compact()

    def nearest(self, query: np.ndarray, allowed: np.ndarray, k: int):
        """The k allowed rows most like the query, best first: (positions, cosines).
        Approximate when the index is ready and the filter leaves at least half the rows
        (the index is asked for more candidates than needed; if too few of them are
        allowed, exact after all); exact otherwise."""
        count = int(np.count_nonzero(allowed))
        if count == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        self._keep_index()
        index = self.ann
        if index is not None and count * 2 >= len(self):
            with self.lock:
                found = index.search(query, 2 * k if count == len(self) else 4 * k)
            positions = np.fromiter(
                (self.where.get(int(i), -1) for i in found), dtype=np.int64, count=len(found)
            )
            positions = positions[(positions >= 0) & (positions < len(allowed))]
            positions = positions[allowed[positions]]
            if len(positions) >= min(k, count):
                return _best(positions, self.rows[positions] @ query, k)
        positions = np.flatnonzero(allowed)
        if count * 4 < len(allowed):  # a few rows: compare only those
            return _best(positions, self.rows[positions] @ query, k)
        return _best(positions, (self.rows[: len(allowed)] @ query)[positions], k)

    def cosines(self, query: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return self.rows[positions] @ query

    @property
    def index_state(self) -> str:
        """off (settings), below_threshold, building, or ready (serving; may be
        rebuilding in the background)."""
        if self.ann is not None:
            return "ready"
        if self._building:
            return "building"
        return "off" if not self.ann_min_rows else "below_threshold"

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Start the approximate index if due and wait until it serves (benchmarks, tests)."""
        self._keep_index()
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._building and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.05)
        return self.ann is not None

    def _keep_index(self) -> None:
        """Build the approximate index in the background when the matrix has grown past
        the threshold, or rebuild it when it has worn out; searches stay exact meanwhile."""
        if not self.ann_min_rows or self._building:
            return
        alive = len(self)
        due = self.ann.worn(alive) if self.ann is not None else alive >= self.ann_min_rows
        if not due:
            return
        with self.lock:
            if self._building:
                return
            self._building, self._built_upto, self._stale_in_build = True, 0, 0
        threading.Thread(target=self._build, name="pps-ann-build", daemon=True).start()

    def _build(self) -> None:
        """Train on a sample, then copy the rows in blocks (holding the lock only to copy)
        until the index has caught up with the matrix, and swap it in. A compaction meanwhile
        moves rows: the build is dropped and a later search starts another."""
        try:
            with self.lock:
                layout, planned = self._layout, len(self)
                sample = self.rows[ann.sample_positions(self.alive[: self.n], planned)].copy()
            index = ann.Approximate(sample, planned)
            while True:
                with self.lock:
                    if self._layout != layout:
                        return
                    start = self._built_upto
                    if start >= self.n:
                        index.stale = self._stale_in_build
                        self.ann = index
                        return
                    end = min(self.n, start + ann.ADD_BLOCK)
                    keep = np.flatnonzero(self.alive[start:end]) + start
                    ids, rows = self.ids[keep].copy(), self.rows[keep].copy()
                    self._built_upto = end
                index.add(ids, rows)
        except Exception:
            log.exception("the approximate index could not be built; searching exactly")
            self.ann_min_rows = 0
        finally:
            self._building = False

    def mask(self, tiers: Iterable[str], growth: bool) -> np.ndarray:
        codes = [TIER_CODES[t] for t in tiers]
        with self.lock:
            n = self.n  # once: rows may be added meanwhile
            keep = self.alive[:n] & np.isin(self.tiers[:n], codes)
            if not growth:
                keep &= ~self.growth[:n]
        return keep

    def _grow(self, capacity: int) -> None:
        def grown(array, shape):
            bigger = np.zeros(shape, dtype=array.dtype)
            bigger[: self.n] = array[: self.n]
            return bigger

        self.ids = grown(self.ids, capacity)
        self.rows = grown(self.rows, (capacity, self.dim))
        self.tiers = grown(self.tiers, capacity)
        self.growth = grown(self.growth, capacity)
        self.alive = grown(self.alive, capacity)

    def _compact(self) -> None:
        self._layout += 1
        keep = np.flatnonzero(self.alive[: self.n])
        self.ids, self.rows = self.ids[keep].copy(), self.rows[keep].copy()
        self.tiers, self.growth = self.tiers[keep].copy(), self.growth[keep].copy()
        self.alive = np.ones(len(keep), dtype=bool)
        self.n, self.dead = len(keep), 0
        self.where = {int(chunk_id): position for position, chunk_id in enumerate(self.ids)}


class Cache:
    """The matrices of the entities searched in this process, one per (entity, model)."""

    def __init__(self, ann_min_rows: int = 0):
        self._lock = threading.RLock()
        self._held: dict[tuple[str, str], tuple[int, Matrix]] = {}
        self.ann_min_rows = ann_min_rows

    def matrix(self, conn: sqlite3.Connection, entity: str, model: str) -> Matrix:
        """The entity's current matrix, loaded again if another process changed it."""
        with self._lock:
            stored = generation(conn, entity)
            held = self._held.get((entity, model))
            if held is not None and held[0] >= stored:
                return held[1]
            loaded_generation, matrix = _load(conn, entity, model, self.ann_min_rows)
            self._held[(entity, model)] = (loaded_generation, matrix)
            return matrix

    def apply(self, entity: str, new_generation: int, model: str, added, removed) -> None:
        """Apply one committed-in-order write: `added` is (ids, rows, tiers, growth)."""
        with self._lock:
            for key in [k for k in self._held if k[0] == entity]:
                held_generation, matrix = self._held[key]
                if held_generation != new_generation - 1:
                    del self._held[key]
                    continue
                matrix.remove(removed)
                if key[1] == model and added is not None:
                    matrix.add(*added)
                self._held[key] = (new_generation, matrix)

    def invalidate(self, entity: str) -> None:
        with self._lock:
            for key in [k for k in self._held if k[0] == entity]:
                del self._held[key]


def generation(conn: sqlite3.Connection, entity: str) -> int:
    row = conn.execute(
        "SELECT generation FROM search_generations WHERE entity = ?", (entity,)
    ).fetchone()
    return row[0] if row else 0


def bump(conn: sqlite3.Connection, entity: str) -> int:
    """Count one more change to the entity's vectors (inside the writing transaction)."""
    return conn.execute(
        "INSERT INTO search_generations (entity, generation) VALUES (?, 1)"
        " ON CONFLICT (entity) DO UPDATE SET generation = generation + 1 RETURNING generation",
        (entity,),
    ).fetchone()[0]


def to_blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _best(positions: np.ndarray, scores: np.ndarray, k: int):
    """The k best (positions, scores), best first (ties keep their order)."""
    top = min(k, len(positions))
    best = np.argpartition(-scores, top - 1)[:top]
    best = best[np.argsort(-scores[best], kind="stable")]
    return positions[best], scores[best]


def _load(
    conn: sqlite3.Connection, entity: str, model: str, ann_min_rows: int = 0
) -> tuple[int, Matrix]:
    """Read the generation and the vectors in one snapshot."""
    conn.execute("BEGIN")
    try:
        loaded_generation = generation(conn, entity)
        rows = conn.execute(
            "SELECT v.chunk_id, v.vector, c.tier, c.growth FROM search_vectors v"
            " JOIN search_chunks c ON c.id = v.chunk_id"
            " WHERE v.entity = ? AND v.model = ?",
            (entity, model),
        ).fetchall()
    finally:
        conn.execute("COMMIT")
    matrix = Matrix(ann_min_rows=ann_min_rows)
    if rows:
        dim = len(rows[0][1]) // 4
        vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(-1, dim)
        matrix.add(
            [r[0] for r in rows],
            vectors,
            [TIER_CODES[r[2]] for r in rows],
            [bool(r[3]) for r in rows],
        )
    return loaded_generation, matrix
