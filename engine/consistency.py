"""The consistency check (`pps check`, `GET /v1/check`, the `validate_retrieval_chain`
tool): every layer of one entity (or all) walked against its source, with counts, each
problem named with the command that repairs it, and the safe repairs done on request.

What is checked, per entity:
- files: each indexed file is still in the home and has the sha256 it was indexed with;
  each file of the home that should be indexed is (or is listed as skipped, and why:
  too big, a name that is not UTF-8, bytes that are not text);
- turns: each stored turn (an event that is not a marker) has its search row, and a
  vector of the current model or an unfinished `embed_events` job naming it; file chunks
  have vectors or an unfinished `embed_files` job; no search row or vector points at an
  event, file or chunk that is gone (or at a marker);
- the queue: no unfinished or dead job points at nothing (an embedding job whose events
  or file are gone, a graph job whose episode is not recorded); dead jobs are counted;
- the graph: each recorded episode's events exist, no event waits for a window that is
  gone; with a graph configured and up, each episode in it is recorded and each fact
  traces to events (through its episodes); a graph that is down is said and skipped;
- summaries: each one's range starts and ends at the entity's events, and none of the
  events it counted is gone.

Repairs (`repair=True`) are only the safe ones: re-index a file, admit a turn, enqueue
the missing embeddings, drop index rows, pending windows and jobs that point at nothing,
put dead embedding jobs back. Source data (events, the home's files) is never deleted
or changed; what only a person can repair (events gone, an untraced fact, a dead graph
job that spends LLM calls) is reported with the command to run.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable

from pydantic import BaseModel, Field, PrivateAttr

from engine.capture.markers import markers_only, turns_only
from engine.graph import episodes
from engine.search import turns
from engine.search.homes import SkippedFile
from engine.search.index import FILE_EMBED_JOB, Index
from engine.store import queue
from engine.store.db import Database

_EXAMPLES = 10
_ENQUEUE_BATCH = 500
_UNFINISHED = "('pending', 'running', 'retry', 'waiting')"
_STUCK = "('pending', 'retry', 'waiting', 'dead')"  # jobs that may be dropped (not running)
_EMBED_KINDS = (turns.JOB_KIND, FILE_EMBED_JOB)


class Problem(BaseModel):
    """One kind of inconsistency in one entity, with how many and a few examples."""

    layer: str = Field(description="files, turns, vectors, queue, graph or summaries.")
    kind: str
    count: int
    examples: list[str] = Field(description=f"Up to {_EXAMPLES} of them: paths, ids, uuids.")
    detail: str
    repair: str = Field(description="The command that repairs it.")
    safe: bool = Field(description="`pps check --repair` does it.")


class EntityCheck(BaseModel):
    entity: str
    counts: dict[str, int]
    graph: str = Field(
        description="ok, disabled (no graph configured), or unavailable/not checked: why;"
        " facts are checked only when ok."
    )
    problems: list[Problem]
    skipped: list[SkippedFile] = Field(
        description="Files of the home not indexed on purpose, and why (too big, a name"
        " that is not UTF-8, bytes that are not text): reported, not problems."
    )
    repaired: list[str] = Field(description="What `--repair` did, in order.")
    _found: dict[str, list] = PrivateAttr(default_factory=dict)  # for the repair


class CheckReport(BaseModel):
    entities: list[EntityCheck]
    problems: int = Field(description="Problems left, counted by item, in every entity.")
    seconds: float


def run(
    index: Index, graph, entities: list[str], *, repair: bool = False, rounds: int = 3
) -> CheckReport:
    """Check these entities (with `repair`: repair what is safe, then check again, up to
    `rounds` times, since one repair can uncover the next: an admitted turn needs its
    vector). `graph`: the Graph (its `.store`), or None when none is configured."""
    started = time.monotonic()
    checked = []
    for entity in entities:
        result = _Walk(index, graph, entity).run()
        done: list[str] = []
        for _ in range(rounds if repair else 0):
            actions = _repair(index, entity, result)
            if not actions:
                break
            done += actions
            result = _Walk(index, graph, entity).run()
        result.repaired = done
        checked.append(result)
    return CheckReport(
        entities=checked,
        problems=sum(p.count for e in checked for p in e.problems),
        seconds=round(time.monotonic() - started, 3),
    )


# --- walking the layers ---


class _Walk:
    def __init__(self, index: Index, graph, entity: str):
        self.index = index
        self.db: Database = index.db
        self.graph = graph
        self.entity = entity
        self.counts: dict[str, int] = {}
        self.problems: list[Problem] = []
        self.found: dict[str, list] = {}
        self.skipped: list[SkippedFile] = []
        self.graph_status = "disabled"

    def run(self) -> EntityCheck:
        for step in (self._files, self._turns, self._vectors, self._queue, self._episodes):
            step()
        self._graph()
        self._summaries()
        result = EntityCheck(
            entity=self.entity,
            counts=self.counts,
            graph=self.graph_status,
            problems=self.problems,
            skipped=self.skipped,
            repaired=[],
        )
        result._found = self.found
        return result

    # plumbing

    def _rows(self, sql: str, *params) -> list:
        return self.db.conn.execute(sql, (self.entity, *params)).fetchall()

    def _count(self, name: str, sql: str, *params) -> None:
        self.counts[name] = self._rows(sql, *params)[0][0]

    def _problem(
        self,
        layer: str,
        kind: str,
        items: list,
        detail: str,
        repair: str,
        safe: bool,
        shown: Callable[[object], str] = str,
    ) -> None:
        if not items:
            return
        self.found[kind] = items
        self.problems.append(
            Problem(
                layer=layer,
                kind=kind,
                count=len(items),
                examples=[shown(i) for i in items[:_EXAMPLES]],
                detail=detail,
                repair=repair,
                safe=safe,
            )
        )

    @property
    def _fix(self) -> str:
        return f"pps check --repair --entity {self.entity}"

    # files

    def _files(self) -> None:
        home = self.index.home(self.entity)
        indexed = {
            r["path"]: r["sha256"]
            for r in self._rows("SELECT path, sha256 FROM search_files WHERE entity = ?")
        }
        on_disk = {source.path for source, _ in home.sources(skipped=self.skipped)}
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
                self.skipped.append(SkippedFile(path=path, problem=problem))
                on_disk.discard(path)
        self.counts.update(
            files_indexed=len(indexed), files_in_home=len(on_disk), files_skipped=len(self.skipped)
        )
        reindex = f"{self._fix} (or pps reindex --entity {self.entity})"
        self._problem(
            "files",
            "file_gone",
            gone,
            "indexed, but no longer in the home (or no longer indexable there)",
            reindex,
            True,
        )
        self._problem(
            "files",
            "file_changed",
            changed,
            "the file's sha256 is not the one indexed: search has its old text",
            reindex,
            True,
        )
        self._problem(
            "files", "file_not_indexed", missing, "in the home but not in the index", reindex, True
        )
        self._problem(
            "files",
            "file_unreadable",
            unreadable,
            "indexed, but cannot be read now (its mode, the disk)",
            "make it readable by the service, then pps check again",
            False,
        )

    # turns and their search rows

    def _turns(self) -> None:
        turn = turns_only("e.")
        self._count("events", "SELECT COUNT(*) FROM events WHERE entity = ?")
        self._count("markers", f"SELECT COUNT(*) FROM events WHERE entity = ? AND {markers_only()}")
        self.counts["turns"] = self.counts["events"] - self.counts["markers"]
        self._count(
            "turn_rows",
            "SELECT COUNT(*) FROM search_chunks WHERE entity = ? AND event_id IS NOT NULL",
        )
        unindexed = [
            r[0]
            for r in self._rows(
                f"SELECT e.id FROM events e WHERE e.entity = ? AND {turn} AND NOT EXISTS"
                " (SELECT 1 FROM search_chunks c WHERE c.event_id = e.id) ORDER BY e.id"
            )
        ]
        orphan_rows = [
            r[0]
            for r in self._rows(
                "SELECT c.id FROM search_chunks c WHERE c.entity = ? AND c.event_id IS NOT NULL"
                " AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = c.event_id"
                f" AND e.entity = c.entity AND {turn}) ORDER BY c.id"
            )
        ]
        orphan_chunks = [
            r[0]
            for r in self._rows(
                "SELECT c.id FROM search_chunks c WHERE c.entity = ? AND c.file_id IS NOT NULL"
                " AND NOT EXISTS (SELECT 1 FROM search_files f WHERE f.id = c.file_id)"
                " ORDER BY c.id"
            )
        ]
        orphan_vectors = [
            r[0]
            for r in self._rows(
                "SELECT v.chunk_id FROM search_vectors v WHERE v.entity = ? AND NOT EXISTS"
                " (SELECT 1 FROM search_chunks c WHERE c.id = v.chunk_id) ORDER BY v.chunk_id"
            )
        ]
        self._problem(
            "turns",
            "turn_unindexed",
            unindexed,
            "a stored turn without its search row: search cannot find it",
            self._fix,
            True,
            lambda i: f"event {i}",
        )
        self._problem(
            "turns",
            "orphan_turn_row",
            orphan_rows,
            "a search row of an event that is gone (or is a marker)",
            self._fix,
            True,
            lambda i: f"chunk {i}",
        )
        self._problem(
            "files",
            "orphan_chunk",
            orphan_chunks,
            "a chunk of a file the index no longer holds",
            self._fix,
            True,
            lambda i: f"chunk {i}",
        )
        self._problem(
            "vectors",
            "orphan_vector",
            orphan_vectors,
            "a vector of a chunk that is gone",
            self._fix,
            True,
            lambda i: f"vector of chunk {i}",
        )

    # vectors, or a job that will make them

    def _vectors(self) -> None:
        model = self.index.model
        pending_turns = (
            "SELECT x.value FROM jobs j, json_each(j.payload, '$.event_ids') x"
            f" WHERE j.entity = ?1 AND j.kind = '{turns.JOB_KIND}' AND j.state IN {_UNFINISHED}"
        )
        rows = self._rows(
            "SELECT c.event_id, c.event_id IN (" + pending_turns + ") AS pending"
            " FROM search_chunks c WHERE c.entity = ?1 AND c.event_id IS NOT NULL"
            " AND NOT EXISTS (SELECT 1 FROM search_vectors v WHERE v.chunk_id = c.id"
            " AND v.model = ?2) ORDER BY c.event_id",
            model,
        )
        without = [r[0] for r in rows if not r[1]]
        self.counts["turns_embedding_pending"] = sum(1 for r in rows if r[1])
        self.counts["turns_embedded"] = self.counts["turn_rows"] - len(rows)
        files_pending = self._rows(
            f"SELECT COUNT(*) FROM jobs WHERE entity = ? AND kind = ? AND state IN {_UNFINISHED}",
            FILE_EMBED_JOB,
        )[0][0]
        chunks = self._rows(
            "SELECT c.id FROM search_chunks c WHERE c.entity = ?1 AND c.file_id IS NOT NULL"
            " AND NOT EXISTS (SELECT 1 FROM search_vectors v WHERE v.chunk_id = c.id"
            " AND v.model = ?2) ORDER BY c.id",
            model,
        )
        self._count(
            "file_chunks",
            "SELECT COUNT(*) FROM search_chunks WHERE entity = ? AND file_id IS NOT NULL",
        )
        self.counts["file_chunks_embedded"] = self.counts["file_chunks"] - len(chunks)
        self.counts["file_chunks_embedding_pending"] = len(chunks) if files_pending else 0
        self._count(
            "vectors_of_other_models",
            "SELECT COUNT(*) FROM search_vectors WHERE entity = ? AND model != ?",
            model,
        )
        self._problem(
            "vectors",
            "turn_without_vector",
            without,
            f"a turn with no vector of {model} and no embedding job pending: search finds it"
            " by its words only",
            self._fix,
            True,
            lambda i: f"event {i}",
        )
        self._problem(
            "vectors",
            "chunk_without_vector",
            [] if files_pending else [r[0] for r in chunks],
            f"a file chunk with no vector of {model} and no embed_files job pending",
            self._fix,
            True,
            lambda i: f"chunk {i}",
        )

    # the queue

    def _queue(self) -> None:
        for state, n in self._rows(
            "SELECT state, COUNT(*) FROM jobs WHERE entity = ? GROUP BY state"
        ):
            self.counts[f"jobs_{state}"] = n
        for state in queue.STATES:
            self.counts.setdefault(f"jobs_{state}", 0)
        orphans = self._rows(
            f"SELECT j.id, j.kind, j.key FROM jobs j WHERE j.entity = ?1 AND j.state IN {_STUCK}"
            " AND ("
            f"  (j.kind = '{turns.JOB_KIND}' AND NOT EXISTS (SELECT 1 FROM"
            "    json_each(j.payload, '$.event_ids') x JOIN events e ON e.id = x.value"
            "    AND e.entity = j.entity))"
            f"  OR (j.kind = '{episodes.JOB_KIND}' AND NOT EXISTS (SELECT 1 FROM episodes ep"
            "    WHERE ep.uuid = json_extract(j.payload, '$.episode')"
            "    AND ep.entity = j.entity))"
            f"  OR (j.kind = '{FILE_EMBED_JOB}' AND j.key GLOB '[0-9]*:*' AND NOT EXISTS"
            "    (SELECT 1 FROM search_files f WHERE f.entity = j.entity"
            "    AND f.id = CAST(substr(j.key, 1, instr(j.key, ':') - 1) AS INTEGER)))"
            ") ORDER BY j.id"
        )
        orphan_ids = {r[0] for r in orphans}
        dead = self._rows(
            "SELECT id, kind FROM jobs WHERE entity = ? AND state = 'dead' ORDER BY id"
        )
        dead = [r for r in dead if r[0] not in orphan_ids]  # dropped, not retried
        dead_embed = [r[0] for r in dead if r[1] in _EMBED_KINDS]
        dead_other = [f"job {r[0]} ({r[1]})" for r in dead if r[1] not in _EMBED_KINDS]
        self._problem(
            "queue",
            "orphan_job",
            [r[0] for r in orphans],
            "a job whose events, episode or file are gone: it can only fail or do nothing",
            self._fix,
            True,
            lambda i: f"job {i}",
        )
        self._problem(
            "queue",
            "dead_embedding_job",
            dead_embed,
            "an embedding job that gave up (see `pps queue` for its last error)",
            self._fix,
            True,
            lambda i: f"job {i}",
        )
        self._problem(
            "queue",
            "dead_job",
            dead_other,
            "a job that gave up (see `pps queue` for its last error); retrying a graph job"
            " spends LLM calls",
            f"pps queue retry --dead --entity {self.entity}",
            False,
        )

    # episodes, and the graph itself

    def _episodes(self) -> None:
        self._count("episodes", "SELECT COUNT(*) FROM episodes WHERE entity = ?")
        self._count(
            "episode_events",
            "SELECT COUNT(*) FROM episode_events ee JOIN episodes ep"
            " ON ep.uuid = ee.episode_uuid WHERE ep.entity = ?",
        )
        broken = self._rows(
            "SELECT ee.episode_uuid, COUNT(*) FROM episode_events ee JOIN episodes ep"
            " ON ep.uuid = ee.episode_uuid WHERE ep.entity = ? AND NOT EXISTS"
            " (SELECT 1 FROM events e WHERE e.id = ee.event_id AND e.entity = ep.entity)"
            " GROUP BY ee.episode_uuid ORDER BY ee.episode_uuid"
        )
        waiting = [
            r[0]
            for r in self._rows(
                "SELECT p.event_id FROM graph_pending p WHERE p.entity = ? AND NOT EXISTS"
                " (SELECT 1 FROM events e WHERE e.id = p.event_id) ORDER BY p.event_id"
            )
        ]
        self._problem(
            "graph",
            "episode_events_gone",
            [f"{r[0]} ({r[1]} events gone)" for r in broken],
            "an episode whose events are gone from the log: the graph keeps what it learned"
            " from them, and a replay cannot rebuild it",
            "none here: the events are source data; restore them from a backup (pps restore)",
            False,
        )
        self._problem(
            "graph",
            "pending_event_gone",
            waiting,
            "an event gone from the log still waits for its episode window",
            self._fix,
            True,
            lambda i: f"event {i}",
        )

    def _graph(self) -> None:
        if self.graph is None:
            self.graph_status = "disabled"
            return
        store = getattr(self.graph, "store", None)
        if store is None:
            why = getattr(self.graph, "why", "the graph is starting")
            self.graph_status = f"unavailable: {why}; facts not checked"
            return
        try:
            in_graph = store.episode_uuids(self.entity)
            facts = store.fact_sources(self.entity)
        except Exception as exc:  # a graph that is down is reported, and skipped
            self.graph_status = f"unavailable: {exc}; facts not checked"
            return
        self.graph_status = "ok"
        recorded = {r[0] for r in self._rows("SELECT uuid FROM episodes WHERE entity = ?")}
        traced = {
            r[0]
            for r in self._rows(
                "SELECT DISTINCT ee.episode_uuid FROM episode_events ee JOIN episodes ep"
                " ON ep.uuid = ee.episode_uuid JOIN events e ON e.id = ee.event_id"
                " WHERE ep.entity = ?"
            )
        }
        self.counts["graph_episodes"] = len(in_graph)
        self.counts["facts"] = len(facts)
        replay = f"pps replay graph --entity {self.entity} --fresh (with the server stopped)"
        self._problem(
            "graph",
            "graph_episode_unrecorded",
            sorted(set(in_graph) - recorded),
            "an episode in the graph that the log does not record",
            replay,
            False,
        )
        self._problem(
            "graph",
            "fact_untraced",
            sorted(u for u, eps in facts.items() if not set(eps) & traced),
            "a fact that traces to no event (none of its episodes has events in the log)",
            replay,
            False,
        )

    # summaries

    def _summaries(self) -> None:
        self._count("summaries", "SELECT COUNT(*) FROM summaries WHERE entity = ?")
        rows = self._rows(
            "SELECT s.id, s.start_id, s.end_id, s.event_count,"
            " (SELECT COUNT(*) FROM events e WHERE e.entity = s.entity"
            "  AND e.id IN (s.start_id, s.end_id)) AS ends,"
            " (SELECT COUNT(*) FROM events e WHERE e.entity = s.entity"
            "  AND e.id BETWEEN s.start_id AND s.end_id AND (s.channels IS NULL"
            "  OR e.channel IN (SELECT value FROM json_each(s.channels)))) AS now"
            " FROM summaries s WHERE s.entity = ? ORDER BY s.id"
        )
        broken = [
            f"summary {r['id']} ({r['start_id']}..{r['end_id']}:"
            f" {r['event_count'] - r['now']} of {r['event_count']} events gone)"
            for r in rows
            if r["ends"] < (1 if r["start_id"] == r["end_id"] else 2) or r["now"] < r["event_count"]
        ]
        self._problem(
            "summaries",
            "summary_events_gone",
            broken,
            "a summary whose range starts or ends at an event that is gone, or covers events"
            " that are gone",
            "none here: the events are source data; restore them from a backup (pps restore)",
            False,
        )


# --- repairing ---


def _repair(index: Index, entity: str, result: EntityCheck) -> list[str]:
    """Do the safe repairs of what `result` found; say what was done."""
    found = result._found
    done: list[str] = []
    db = index.db
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
    if found.get("pending_event_gone"):
        with db.write() as conn:
            conn.execute(
                "DELETE FROM graph_pending WHERE entity = ?"
                " AND event_id IN (SELECT value FROM json_each(?))",
                (entity, json.dumps(found["pending_event_gone"])),
            )
        done.append(
            f"dropped {len(found['pending_event_gone'])} episode-window entries of gone events"
        )
    if found.get("orphan_job"):
        with db.write() as conn:
            dropped = conn.execute(
                f"DELETE FROM jobs WHERE entity = ? AND state IN {_STUCK}"
                " AND id IN (SELECT value FROM json_each(?))",
                (entity, json.dumps(found["orphan_job"])),
            ).rowcount
        done.append(f"dropped {dropped} jobs pointing at nothing")
    for job_id in found.get("dead_embedding_job", []):
        queue.retry_job(db, entity, job_id)
        done.append(f"put dead embedding job {job_id} back")
    missing = found.get("turn_without_vector", [])
    if missing:
        with db.write() as conn:
            for start in range(0, len(missing), _ENQUEUE_BATCH):
                batch = missing[start : start + _ENQUEUE_BATCH]
                key = f"check-{uuid.uuid4().hex[:12]}"
                queue.enqueue(conn, entity, turns.JOB_KIND, key, {"event_ids": batch})
        done.append(f"enqueued embeddings for {len(missing)} turns")
    if found.get("chunk_without_vector"):
        with db.write() as conn:
            key = f"check-{uuid.uuid4().hex[:12]}"
            queue.enqueue(conn, entity, FILE_EMBED_JOB, key, {})
        done.append(f"enqueued embeddings for {len(found['chunk_without_vector'])} file chunks")
    return done
