"""The index's part of `pps check`: files against the home, search rows against the turns
they index, vectors (or a job that will make them), and the embedding jobs themselves.

- files: each indexed file is still in the home with the sha256 it was indexed with; each
  file of the home that should be indexed is (or is listed as skipped, and why);
- rows: each stored turn has its search row; no search row, chunk or vector points at an
  event (or a marker), a file or a chunk that is gone;
- vectors: each turn and file chunk has a vector of the current model, or an unfinished
  embedding job that will make it;
- jobs: an embedding job whose events or file are gone is an orphan (the queue's part
  reports it, and drops it on repair).

Repairs: re-index a file, drop the rows that point at nothing, admit a turn (`index`), and
enqueue the missing embeddings (`embeddings`, after the queue's repairs).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid

from engine.capture import check as capture_check
from engine.search import turns
from engine.search.homes import SkippedFile
from engine.search.index import FILE_EMBED_JOB, Index
from engine.store import check as store_check
from engine.store import queue
from engine.store.check import Findings
from engine.store.db import Database

EMBED_KINDS = (turns.JOB_KIND, FILE_EMBED_JOB)  # dead ones the repair puts back
_ENQUEUE_BATCH = 500
_FILE_KEY = re.compile(r"([0-9]+)[^:]*:")  # an embed_files job of one file: "<file id>:..."


def files(findings: Findings, index: Index) -> list[SkippedFile]:
    """Check the indexed files against the home; returns the files skipped on purpose."""
    entity = findings.entity
    home = index.home(entity)
    skipped: list[SkippedFile] = []
    indexed = {
        r["path"]: r["sha256"]
        for r in index.db.conn.execute(
            "SELECT path, sha256 FROM search_files WHERE entity = ?", (entity,)
        )
    }
    on_disk = {source.path for source, _ in home.sources(skipped=skipped)}
    gone, changed, unreadable = [], [], []
    for path, digest in sorted(indexed.items()):
        if path not in on_disk:
            gone.append(path)
            continue
        try:
            with open(home.path(path), "rb") as handle:
                now = hashlib.file_digest(handle, "sha256").hexdigest()
        except OSError as exc:
            unreadable.append(f"{path}: {exc.strerror or exc}")
            continue
        if now != digest:
            changed.append(path)
    missing = []
    for path in sorted(on_disk - indexed.keys()):
        problem = home.text_problem(path)  # text at its start, not in the rest
        if problem is None:
            missing.append(path)
        else:
            skipped.append(SkippedFile(path=path, problem=problem))
            on_disk.discard(path)
    findings.counts.update(
        files_indexed=len(indexed), files_in_home=len(on_disk), files_skipped=len(skipped)
    )
    reindex = f"{findings.fix} (or pps reindex --entity {entity})"
    findings.problem(
        "files",
        "file_gone",
        gone,
        "indexed, but no longer in the home (or no longer indexable there)",
        reindex,
        True,
    )
    findings.problem(
        "files",
        "file_changed",
        changed,
        "the file's sha256 is not the one indexed: search has its old text",
        reindex,
        True,
    )
    findings.problem(
        "files", "file_not_indexed", missing, "in the home but not in the index", reindex, True
    )
    findings.problem(
        "files",
        "file_unreadable",
        unreadable,
        "indexed, but cannot be read now (its mode, the disk)",
        "make it readable by the service, then pps check again",
        False,
    )
    return skipped


def rows(findings: Findings, index: Index) -> None:
    """Check the search rows against the turns, the chunks against the files, the vectors
    against the chunks."""
    entity, conn = findings.entity, index.db.conn
    findings.counts["turn_rows"] = conn.execute(
        "SELECT COUNT(*) FROM search_chunks WHERE entity = ? AND event_id IS NOT NULL",
        (entity,),
    ).fetchone()[0]
    ids = capture_check.turn_ids(index.db, entity)
    unindexed = [
        r[0]
        for r in conn.execute(
            "SELECT x.value FROM json_each(?) x WHERE NOT EXISTS"
            " (SELECT 1 FROM search_chunks c WHERE c.event_id = x.value) ORDER BY x.value",
            (json.dumps(ids),),
        )
    ]
    turn = set(ids)
    orphan_rows = [
        r[0]
        for r in conn.execute(
            "SELECT id, event_id FROM search_chunks WHERE entity = ? AND event_id IS NOT NULL"
            " ORDER BY id",
            (entity,),
        )
        if r[1] not in turn  # gone, another entity's, or a marker
    ]
    orphan_chunks = [
        r[0]
        for r in conn.execute(
            "SELECT c.id FROM search_chunks c WHERE c.entity = ? AND c.file_id IS NOT NULL"
            " AND NOT EXISTS (SELECT 1 FROM search_files f WHERE f.id = c.file_id)"
            " ORDER BY c.id",
            (entity,),
        )
    ]
    orphan_vectors = [
        r[0]
        for r in conn.execute(
            "SELECT v.chunk_id FROM search_vectors v WHERE v.entity = ? AND NOT EXISTS"
            " (SELECT 1 FROM search_chunks c WHERE c.id = v.chunk_id) ORDER BY v.chunk_id",
            (entity,),
        )
    ]
    findings.problem(
        "turns",
        "turn_unindexed",
        unindexed,
        "a stored turn without its search row: search cannot find it",
        findings.fix,
        True,
        lambda i: f"event {i}",
    )
    findings.problem(
        "turns",
        "orphan_turn_row",
        orphan_rows,
        "a search row of an event that is gone (or is a marker)",
        findings.fix,
        True,
        lambda i: f"chunk {i}",
    )
    findings.problem(
        "files",
        "orphan_chunk",
        orphan_chunks,
        "a chunk of a file the index no longer holds",
        findings.fix,
        True,
        lambda i: f"chunk {i}",
    )
    findings.problem(
        "vectors",
        "orphan_vector",
        orphan_vectors,
        "a vector of a chunk that is gone",
        findings.fix,
        True,
        lambda i: f"vector of chunk {i}",
    )


def vectors(findings: Findings, index: Index) -> None:
    """Check that each turn and file chunk has a vector of the current model, or an
    unfinished embedding job that will make it."""
    entity, conn, model = findings.entity, index.db.conn, index.model
    pending = {
        event_id
        for _, _, payload in store_check.jobs_of(index.db, entity, turns.JOB_KIND, queue.UNFINISHED)
        for event_id in payload.get("event_ids", [])
    }
    unembedded = [
        r[0]
        for r in conn.execute(
            "SELECT c.event_id FROM search_chunks c WHERE c.entity = ? AND c.event_id IS NOT NULL"
            " AND NOT EXISTS (SELECT 1 FROM search_vectors v WHERE v.chunk_id = c.id"
            " AND v.model = ?) ORDER BY c.event_id",
            (entity, model),
        )
    ]
    without = [i for i in unembedded if i not in pending]
    counts = findings.counts
    counts["turns_embedding_pending"] = len(unembedded) - len(without)
    counts["turns_embedded"] = counts["turn_rows"] - len(unembedded)
    files_pending = bool(store_check.jobs_of(index.db, entity, FILE_EMBED_JOB, queue.UNFINISHED))
    chunks = [
        r[0]
        for r in conn.execute(
            "SELECT c.id FROM search_chunks c WHERE c.entity = ? AND c.file_id IS NOT NULL"
            " AND NOT EXISTS (SELECT 1 FROM search_vectors v WHERE v.chunk_id = c.id"
            " AND v.model = ?) ORDER BY c.id",
            (entity, model),
        )
    ]
    counts["file_chunks"] = conn.execute(
        "SELECT COUNT(*) FROM search_chunks WHERE entity = ? AND file_id IS NOT NULL", (entity,)
    ).fetchone()[0]
    counts["file_chunks_embedded"] = counts["file_chunks"] - len(chunks)
    counts["file_chunks_embedding_pending"] = len(chunks) if files_pending else 0
    counts["vectors_of_other_models"] = conn.execute(
        "SELECT COUNT(*) FROM search_vectors WHERE entity = ? AND model != ?", (entity, model)
    ).fetchone()[0]
    findings.problem(
        "vectors",
        "turn_without_vector",
        without,
        f"a turn with no vector of {model} and no embedding job pending: search finds it"
        " by its words only",
        findings.fix,
        True,
        lambda i: f"event {i}",
    )
    findings.problem(
        "vectors",
        "chunk_without_vector",
        [] if files_pending else chunks,
        f"a file chunk with no vector of {model} and no embed_files job pending",
        findings.fix,
        True,
        lambda i: f"chunk {i}",
    )


def orphan_jobs(db: Database, entity: str) -> list[int]:
    """The entity's embedding jobs (not running) that point at nothing: an embed_events
    job none of whose events is there, an embed_files job of a file the index lost."""
    jobs = store_check.jobs_of(db, entity, turns.JOB_KIND, store_check.STUCK)
    named = {i for _, _, payload in jobs for i in payload.get("event_ids", [])}
    missing = capture_check.gone(db, named, entity) if named else set()
    orphans = [
        job_id
        for job_id, _, payload in jobs
        if all(i in missing for i in payload.get("event_ids", []))
    ]
    rows = db.conn.execute("SELECT id FROM search_files WHERE entity = ?", (entity,))
    held = {r[0] for r in rows}
    for job_id, key, _ in store_check.jobs_of(db, entity, FILE_EMBED_JOB, store_check.STUCK):
        one = _FILE_KEY.match(key)
        if one and int(one[1]) not in held:
            orphans.append(job_id)
    return orphans


def repair_index(index: Index, entity: str, found: dict[str, list]) -> list[str]:
    """Re-index the files found, drop the rows that point at nothing, admit the turns
    without a search row; say what was done."""
    done: list[str] = []
    for kind in ("file_gone", "file_changed", "file_not_indexed"):
        for path in found.get(kind, []):
            outcome = index.sync_file(entity, path)
            done.append(f"{path}: {outcome} (was {kind.removeprefix('file_').replace('_', ' ')})")
    if found.get("orphan_turn_row") or found.get("orphan_chunk"):
        ids = found.get("orphan_turn_row", []) + found.get("orphan_chunk", [])
        done.append(f"dropped {index.drop_chunks(entity, ids)} search rows pointing at nothing")
    if found.get("orphan_vector"):
        done.append(f"dropped {index.drop_orphan_vectors(entity)} vectors of chunks gone")
    if found.get("turn_unindexed"):
        done.append(f"admitted {turns.backfill(index, entity)} turns into the index")
    return done


def repair_embeddings(index: Index, entity: str, found: dict[str, list]) -> list[str]:
    """Enqueue the embeddings of the turns and file chunks found without a vector."""
    done: list[str] = []
    missing = found.get("turn_without_vector", [])
    if missing:
        with index.db.write() as conn:
            for start in range(0, len(missing), _ENQUEUE_BATCH):
                batch = missing[start : start + _ENQUEUE_BATCH]
                key = f"check-{uuid.uuid4().hex[:12]}"
                queue.enqueue(conn, entity, turns.JOB_KIND, key, {"event_ids": batch})
        done.append(f"enqueued embeddings for {len(missing)} turns")
    if found.get("chunk_without_vector"):
        with index.db.write() as conn:
            key = f"check-{uuid.uuid4().hex[:12]}"
            queue.enqueue(conn, entity, FILE_EMBED_JOB, key, {})
        done.append(f"enqueued embeddings for {len(found['chunk_without_vector'])} file chunks")
    return done


def vector_backlog(db: Database, model: str, entity: str | None = None) -> list[queue.Backlog]:
    """The entities (or the one) with chunks still without a vector of `model` while
    embedding jobs are open to make them: the whole index after a model change, a few
    new turns otherwise. Without such jobs nothing is being made, and the two counts
    (over indexes, no join; 120 ms at a million chunks, where /health would pay them
    on every call) are not taken."""
    conn = db.conn
    if not queue.open_jobs(conn, EMBED_KINDS, entity):
        return []
    scope, params = ("WHERE entity = ?", [entity]) if entity else ("", [])
    chunks_of = dict(
        conn.execute(f"SELECT entity, COUNT(*) FROM search_chunks {scope} GROUP BY entity", params)
    )
    made = dict(
        conn.execute(
            "SELECT entity, COUNT(*) FROM search_vectors WHERE model = ?"
            f" {'AND entity = ?' if entity else ''} GROUP BY entity",
            [model, *params],
        )
    )
    return [
        queue.Backlog(entity=e, what="search vectors", model=model, done=made.get(e, 0), total=n)
        for e, n in sorted(chunks_of.items())
        if made.get(e, 0) < n
    ]
