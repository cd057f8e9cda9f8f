"""An approximate nearest-neighbour index over one entity's vectors, for entities past
the size where brute force misses the search latency goal.

Brute force is exact and costs one matrix product over every vector: about 15 ms at
100k vectors on two cores and 150 ms at 1M (bench/search_scale.py). An inverted-file
index (faiss IVF: k-means cells, 8-bit scalar-quantised vectors, inner product) scans
only the cells nearest the query. It proposes candidates; their cosines are then
computed exactly from the full-precision matrix, so scores never change, only which rows
are looked at.

This module is the only one that imports faiss. An index is built from rows handed to it
in blocks (`Builder`), so whoever owns the rows decides how long to hold them;
vectors.Matrix builds one in a background thread and searches exactly until it is ready.
Rows removed from the matrix stay in their cells (they are dropped when re-scored, having
no position any more); `stale` counts them so the owner knows when to rebuild.
"""

from __future__ import annotations

import math

import faiss
import numpy as np

# One thread: a build runs beside live searches on small machines, and a single query's
# scan is not split across threads anyway.
faiss.omp_set_num_threads(1)

TRAIN_PER_CELL = 40  # k-means sample size per cell (faiss warns below 39)
ADD_BLOCK = 20_000


def cells_for(rows: int) -> int:
    """About 4·sqrt(n) cells: a few hundred rows each."""
    return max(8, int(4 * math.sqrt(rows)))


def probes_for(cells: int) -> int:
    """Cells scanned per query: a sixteenth of them, at least 16 (recall over speed)."""
    return min(cells, max(16, cells // 16))


class Approximate:
    """A trained IVF index holding (chunk id → vector) pairs; not thread-safe: the owner
    serialises add and search."""

    def __init__(self, sample: np.ndarray, planned_rows: int):
        dim = sample.shape[1]
        cells = min(cells_for(planned_rows), max(1, len(sample) // TRAIN_PER_CELL))
        self._index = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(dim),
            dim,
            cells,
            faiss.ScalarQuantizer.QT_8bit,
            faiss.METRIC_INNER_PRODUCT,
        )
        self._index.train(np.ascontiguousarray(sample, dtype=np.float32))
        self._index.nprobe = probes_for(cells)
        self.trained_on = planned_rows
        self.stale = 0

    def __len__(self) -> int:
        return self._index.ntotal

    def add(self, ids: np.ndarray, rows: np.ndarray) -> None:
        if len(ids):
            self._index.add_with_ids(
                np.ascontiguousarray(rows, dtype=np.float32), np.asarray(ids, dtype=np.int64)
            )

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        """Ids of about the k rows nearest the query (fewer if the index holds fewer)."""
        _, ids = self._index.search(np.asarray(query, dtype=np.float32)[None, :], k)
        found = ids[0]
        return found[found >= 0]

    def worn(self, alive_rows: int) -> bool:
        """Time to rebuild: a quarter of what it holds is gone, or the rows have doubled
        since its cells were drawn."""
        return self.stale * 4 > len(self) or alive_rows > 2 * self.trained_on


def sample_positions(alive: np.ndarray, rows: int, seed: int = 0) -> np.ndarray:
    """Positions of alive rows to train on: TRAIN_PER_CELL per planned cell."""
    positions = np.flatnonzero(alive)
    want = cells_for(rows) * TRAIN_PER_CELL
    if len(positions) <= want:
        return positions
    return np.sort(np.random.default_rng(seed).choice(positions, want, replace=False))
