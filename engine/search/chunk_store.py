"""The search index's chunks and their vectors: how a chunk gets its vector, keeps it,
and loses it, with the entity's matrix in memory kept in step.

`search_chunks` holds what is ranked (FTS5 over it by triggers), `search_vectors` one
vector per chunk with its model. Vectors are computed outside the write transaction and
reused for chunks whose embedded text did not change (`embed_hash`: an edited file, a
renamed one), so an edit costs one embedding per changed chunk. When the model cannot
load, chunks are stored without vectors (BM25 still finds them) and `embed_missing`
fills them in later. Every change is applied, in its transaction, to the generation
counter and to the cache of matrices (engine/search/vectors.py); a transaction that fails
drops the entity's matrix, to be loaded again. `ChunkStore` is what the index stands
on: engine/search/index.py keeps the chunks in step with the homes' files, and
engine/search/turns.py with the captured turns.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable

import numpy as np

from engine.kernel.config import Settings
from engine.search import embeddings, vectors
from engine.store.db import Database

log = logging.getLogger("pps.index")

Progress = Callable[[int, int], None]
_EMBED_BATCH = 256
_URGENT_MAX = 16  # new turns embedded at a query's priority; more go with the bulk work


class ChunkStore:
    """Every entity's chunks and vectors, with the vectors held in memory."""

    def __init__(self, settings: Settings, db: Database):
        self.settings = settings
        self.db = db
        self.cache = vectors.Cache(settings.search_ann_min_rows)
        self._warned = False  # about indexing without vectors, once

    def embedder(self, *, wait: bool = True) -> embeddings.Embedder:
        """The model; raises embeddings.Unavailable (Loading, without `wait`, while it
        loads: a query goes on without it rather than wait)."""
        return embeddings.get(self.settings, wait=wait)

    @property
    def model(self) -> str:
        return self.settings.embedding_model

    @staticmethod
    def _drop_file_chunks(conn, file_id: int, most: int = -1) -> list[int]:
        """Delete a file's chunks (at most `most` of them) and their vectors; returns the
        chunk ids."""
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM search_chunks WHERE file_id = ? LIMIT ?", (file_id, most)
            )
        ]
        wanted = json.dumps(ids)
        conn.execute(
            "DELETE FROM search_vectors WHERE chunk_id IN (SELECT value FROM json_each(?))",
            (wanted,),
        )
        conn.execute(
            "DELETE FROM search_chunks WHERE id IN (SELECT value FROM json_each(?))", (wanted,)
        )
        return ids

    def embed_missing(
        self,
        entity: str,
        chunk_ids: Iterable[int] | None = None,
        progress: Progress | None = None,
        files_only: bool = False,
        limit: int | None = None,
        urgent: bool = False,
    ) -> int:
        """Embed the entity's chunks (or the given ones; or its files' chunks, at most
        `limit`) that have no vector of the current model, each batch committed. `urgent`
        (a few new turns: someone waits for them): at the priority of a query, ahead of
        any backlog of bulk work. Raises embeddings.Unavailable. Returns how many were
        embedded."""
        embedder = self.embedder()
        query = (
            "SELECT c.id, c.kind, c.body, c.context, c.embed_hash, c.tier, c.growth"
            " FROM search_chunks c LEFT JOIN search_vectors v"
            " ON v.chunk_id = c.id AND v.model = ?"
            " WHERE c.entity = ? AND v.chunk_id IS NULL"
        )
        params: list = [self.model, entity]
        if chunk_ids is not None:
            wanted = sorted(set(chunk_ids))
            if not wanted:
                return 0
            query += " AND c.id IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(wanted))
        if files_only:
            query += " AND c.file_id IS NOT NULL"
        query += " ORDER BY c.id"
        if limit is not None:
            query += " LIMIT ?"
            params.append(limit)
        pending = self.db.conn.execute(query, params).fetchall()
        done = 0
        for start in range(0, len(pending), _EMBED_BATCH):
            batch = pending[start : start + _EMBED_BATCH]
            reused = self._reusable_vectors(entity, [r["embed_hash"] for r in batch])
            todo = [r for r in batch if r["embed_hash"] not in reused]
            texts = [embed_text(r["kind"], r["body"], r["context"]) for r in todo]
            if urgent and len(texts) <= _URGENT_MAX:
                rows = embedder.embed_now(texts)
            else:
                rows = embedder.embed(texts)
            made = dict(reused)
            made.update({r["embed_hash"]: rows[i] for i, r in enumerate(todo)})
            with self._applying(entity) as apply, self.db.write() as conn:
                alive = {
                    r[0]
                    for r in conn.execute(
                        "SELECT id FROM search_chunks WHERE id IN (SELECT value FROM json_each(?))",
                        (json.dumps([r["id"] for r in batch]),),
                    )
                }
                kept = [r for r in batch if r["id"] in alive]
                ids = [r["id"] for r in kept]
                vecs = [made[r["embed_hash"]] for r in kept]
                self._store_vectors(conn, entity, ids, vecs)
                tiers = [vectors.TIER_CODES[r["tier"]] for r in kept]
                apply(ids, vecs, tiers, [bool(r["growth"]) for r in kept], [])
            done += len(batch)
            if progress:
                progress(done, len(pending))
        return done

    def drop_chunks(self, entity: str, chunk_ids: Iterable[int]) -> int:
        """Delete these chunks of the entity and their vectors (rows the consistency check
        found pointing at nothing); returns how many chunks were deleted."""
        wanted = json.dumps(sorted(set(chunk_ids)))
        with self._applying(entity) as apply, self.db.write() as conn:
            conn.execute(
                "DELETE FROM search_vectors WHERE entity = ?"
                " AND chunk_id IN (SELECT value FROM json_each(?))",
                (entity, wanted),
            )
            removed = [
                r[0]
                for r in conn.execute(
                    "DELETE FROM search_chunks WHERE entity = ?"
                    " AND id IN (SELECT value FROM json_each(?)) RETURNING id",
                    (entity, wanted),
                )
            ]
            apply([], [], [], [], removed)
        return len(removed)

    def drop_orphan_vectors(self, entity: str) -> int:
        """Delete the entity's vectors whose chunk is gone; returns how many."""
        with self._applying(entity) as apply, self.db.write() as conn:
            removed = [
                r[0]
                for r in conn.execute(
                    "DELETE FROM search_vectors WHERE entity = ? AND NOT EXISTS"
                    " (SELECT 1 FROM search_chunks c WHERE c.id = search_vectors.chunk_id)"
                    " RETURNING chunk_id",
                    (entity,),
                )
            ]
            apply([], [], [], [], removed)
        return len(removed)

    def _reusable_vectors(self, entity: str, hashes: list[str]) -> dict[str, np.ndarray]:
        """Vectors of the current model already stored for the same embedded text."""
        if not hashes:
            return {}
        rows = self.db.conn.execute(
            "SELECT c.embed_hash, v.vector FROM search_chunks c"
            " JOIN search_vectors v ON v.chunk_id = c.id"
            " WHERE c.entity = ? AND v.model = ?"
            " AND c.embed_hash IN (SELECT value FROM json_each(?))",
            (entity, self.model, json.dumps(sorted(set(hashes)))),
        ).fetchall()
        return {r[0]: np.frombuffer(r[1], dtype=np.float32) for r in rows}

    def _embed_new(self, rows: list[dict], reused: dict) -> dict[str, np.ndarray]:
        todo = {r["embed_hash"]: r for r in rows if r["embed_hash"] not in reused}
        if not todo:
            return {}
        try:
            embedder = self.embedder()
            texts = [embed_text(r["kind"], r["body"], r["context"]) for r in todo.values()]
            return dict(zip(todo, embedder.embed(texts), strict=True))
        except embeddings.Unavailable as exc:
            if not self._warned:
                log.warning("indexing without vectors (BM25 only until the model loads): %s", exc)
                self._warned = True
            return {}

    def _store_vectors(self, conn, entity: str, ids: list[int], vecs: list) -> None:
        conn.executemany(
            "INSERT INTO search_vectors (chunk_id, entity, model, vector) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (chunk_id) DO UPDATE SET model = excluded.model,"
            " vector = excluded.vector",
            [(i, entity, self.model, vectors.to_blob(v)) for i, v in zip(ids, vecs, strict=True)],
        )

    def _applying(self, entity: str):
        """A context manager handing out `apply(ids, vecs, tiers, growth, removed)`, which
        records the change (generation bump) in the open transaction and in memory; if the
        transaction then fails, the entity's matrix is dropped and reloaded later."""
        index = self

        class _Applying:
            def __enter__(self):
                return self.apply

            def apply(self, ids, vecs, tiers, growth, removed):
                if not ids and not removed:
                    return
                added = (ids, np.asarray(vecs, dtype=np.float32), tiers, growth) if ids else None
                generation = vectors.bump(index.db.conn, entity)
                index.cache.apply(entity, generation, index.model, added, removed)

            def __exit__(self, kind, exc, tb):
                if kind is not None:
                    index.cache.invalidate(entity)
                return False

        return _Applying()

    def matrix(self, entity: str) -> vectors.Matrix:
        return self.cache.matrix(self.db.conn, entity, self.model)

    def drop_vectors(self, entity: str) -> None:
        """Forget every vector of the entity, of any model (to embed all again)."""
        with self._applying(entity) as apply, self.db.write() as conn:
            removed = [
                r[0]
                for r in conn.execute(
                    "DELETE FROM search_vectors WHERE entity = ? RETURNING chunk_id", (entity,)
                )
            ]
            apply([], [], [], [], removed)


def embed_text(kind: str, body: str, context: str) -> str:
    """What is embedded: a turn as itself (its neighbours only help BM25), a file chunk
    with its title and headings in front, which say what it is about."""
    if kind == "turn" or not context:
        return body
    return f"{context}\n\n{body}"


def embed_hash(kind: str, body: str, context: str) -> str:
    return _hash(embed_text(kind, body, context))


def content_hash(text: str) -> str:
    return _hash(" ".join(text.split()))


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
