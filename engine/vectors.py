"""Each entity's vectors in memory, for brute-force cosine search.

The vectors live in SQLite (`search_vectors`, float32 blobs, each with its model); a
search needs them as one matrix. The matrix of an entity is loaded on its first search
and then kept in step: a write in this process changes it in place (inside the write
transaction, so writes apply in commit order), and every write bumps the entity's
generation in the database, so a write from another process (`pps reindex` while the
server runs) is noticed by the next search, which loads the matrix again.

Brute force over float32 takes milliseconds at 100k rows; see bench/search_scale.py.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence

import numpy as np

TIER_CODES = {"shortform": 0, "longform": 1, "domain": 2}


class Matrix:
    """One entity's vectors: rows, their chunk ids, tier and growth flags, and which rows
    are still alive. Removal marks a row dead; the matrix is compacted when a quarter of
    it is dead. Appends grow the capacity geometrically."""

    def __init__(self, dim: int | None = None):
        self.dim = dim
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
        for chunk_id in ids:
            position = self.where.pop(int(chunk_id), None)
            if position is not None:
                self.alive[position] = False
                self.dead += 1
        if self.dead > 1024 and self.dead * 4 > self.n:
            self._compact()

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine of the query with every row (dead rows included; mask with `alive`)."""
        if self.n == 0:
            return np.zeros(0, dtype=np.float32)
        return self.rows[: self.n] @ query

    def mask(self, tiers: Iterable[str], growth: bool) -> np.ndarray:
        codes = [TIER_CODES[t] for t in tiers]
        keep = self.alive[: self.n] & np.isin(self.tiers[: self.n], codes)
        if not growth:
            keep &= ~self.growth[: self.n]
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
        keep = np.flatnonzero(self.alive[: self.n])
        self.ids, self.rows = self.ids[keep].copy(), self.rows[keep].copy()
        self.tiers, self.growth = self.tiers[keep].copy(), self.growth[keep].copy()
        self.alive = np.ones(len(keep), dtype=bool)
        self.n, self.dead = len(keep), 0
        self.where = {int(chunk_id): position for position, chunk_id in enumerate(self.ids)}


class Cache:
    """The matrices of the entities searched in this process, one per (entity, model)."""

    def __init__(self):
        self._lock = threading.RLock()
        self._held: dict[tuple[str, str], tuple[int, Matrix]] = {}

    def matrix(self, conn: sqlite3.Connection, entity: str, model: str) -> Matrix:
        """The entity's current matrix, loaded again if another process changed it."""
        with self._lock:
            stored = generation(conn, entity)
            held = self._held.get((entity, model))
            if held is not None and held[0] >= stored:
                return held[1]
            loaded_generation, matrix = _load(conn, entity, model)
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


def _load(conn: sqlite3.Connection, entity: str, model: str) -> tuple[int, Matrix]:
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
    matrix = Matrix()
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
