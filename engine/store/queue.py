"""The durable job queue: the heart of "nothing lost" for every derived layer.

A job is enqueued in the same transaction as the event that causes it. Workers claim
jobs with a lease and renew it while they run; a worker that dies leaves a lease that
expires, and the job is claimed again. A job leaves the queue only as `done`, or as
`dead` with its last error after `max_attempts`; in between it is `pending`, `running`,
`retry` (with `next_attempt_at`, exponential backoff with jitter) or
`waiting` (its handler raised `Pause`: no LLM configured, a key refused). A pause stops
the whole (entity, kind) instead of burning attempts, until `pps queue retry` or a
restart: every job of it waits (those queued then, and those queued while it lasts), so
what the counts say is what the jobs do, and the pause says why. While the database has
no space to write (a full disk), workers claim nothing until it has room again;
`Workers.health()` says which kind cannot work, and why.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field, computed_field

from engine.kernel import backoff, timestamps
from engine.kernel.errors import NotFound, Unavailable
from engine.store.db import Database
from engine.store.ticker import FailingLoop

log = logging.getLogger("pps.queue")

_RELEASE = "lease_owner = NULL, lease_expires_at = NULL"
STATES = ("pending", "running", "done", "retry", "waiting", "dead")
UNFINISHED = ("pending", "running", "retry", "waiting")
_UNFINISHED = ",".join(f"'{s}'" for s in UNFINISHED)


class Pause(Exception):
    """Raised by a handler when no retry can succeed until a person acts."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Job(BaseModel):
    id: int
    entity: str
    kind: str
    key: str
    payload: dict[str, Any]
    state: str
    attempts: int
    next_attempt_at: str | None
    lease_owner: str | None
    lease_expires_at: str | None
    last_error: str | None
    created_at: str
    updated_at: str

    @classmethod
    def from_row(cls, row) -> Job:
        return cls.model_validate({**dict(row), "payload": json.loads(row["payload"])})


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Policy:
    lease_s: float = 60.0
    max_attempts: int = 8
    backoff_initial_s: float = 2.0
    backoff_max_s: float = 600.0
    poll_s: float = 0.5
    clock: Callable[[], datetime] = field(default=_utcnow, repr=False, compare=False)
    """The time leases expire and retries fall due by (tests pass a clock they move)."""

    @classmethod
    def from_settings(cls, settings) -> Policy:
        return cls(
            lease_s=settings.queue_lease_s,
            max_attempts=settings.queue_max_attempts,
            backoff_initial_s=settings.queue_backoff_initial_s,
            backoff_max_s=settings.queue_backoff_max_s,
            poll_s=settings.queue_poll_s,
        )

    def backoff(self, attempts: int) -> float:
        """Seconds before the next attempt after `attempts` failed ones: the initial delay
        doubled for each failure after the first, plus up to one initial delay of jitter,
        capped at the longest."""
        initial = self.backoff_initial_s
        return backoff.delay(attempts, initial, self.backoff_max_s, jitter=initial)


def enqueue(conn: sqlite3.Connection, entity: str, kind: str, key: str, payload: dict) -> None:
    """Add a job inside the caller's write transaction (waiting, where its queue is
    paused); a repeated (entity, kind, key) adds nothing."""
    now = timestamps.now()
    conn.execute(
        "INSERT INTO jobs (entity, kind, key, payload, state, last_error, created_at, updated_at)"
        " SELECT ?, ?, ?, ?, CASE WHEN p.reason IS NULL THEN 'pending' ELSE 'waiting' END,"
        " p.reason, ?, ? FROM (SELECT 1) LEFT JOIN queue_pauses p"
        " ON p.entity = ? AND p.kind = ? WHERE true"
        " ON CONFLICT (entity, kind, key) DO NOTHING",
        (entity, kind, key, json.dumps(payload), now, now, entity, kind),
    )


def queued(conn: sqlite3.Connection, entity: str, kind: str) -> int:
    """How many of the entity's jobs of `kind` wait to run (pending, retry, waiting; not
    one running now)."""
    return conn.execute(
        "SELECT COUNT(*) FROM jobs WHERE entity = ? AND kind = ?"
        " AND state IN ('pending', 'retry', 'waiting')",
        (entity, kind),
    ).fetchone()[0]


def open_jobs(conn: sqlite3.Connection, kinds: tuple[str, ...], entity: str | None = None) -> bool:
    """Whether any job of these kinds (of the entity, where given) is not done or dead
    (the `jobs_open` index answers it)."""
    marks = ",".join("?" * len(kinds))
    scope, params = (" AND entity = ?", [entity]) if entity else ("", [])
    found = conn.execute(
        f"SELECT 1 FROM jobs WHERE kind IN ({marks}) AND state NOT IN ('done', 'dead')"
        f"{scope} LIMIT 1",
        [*kinds, *params],
    ).fetchone()
    return found is not None


def claim(db: Database, kind: str, owner: str, policy: Policy) -> Job | None:
    """Take the oldest ready job of `kind` (pending, retry due, or lease expired)."""
    while True:
        now = _at(policy.clock)
        with db.write() as conn:
            row = conn.execute(
                "UPDATE jobs SET state = 'running', lease_owner = ?, lease_expires_at = ?,"
                " attempts = attempts + 1, updated_at = ?"
                " WHERE id = (SELECT j.id FROM jobs j WHERE j.kind = ? AND ("
                "   j.state = 'pending'"
                "   OR (j.state = 'retry' AND j.next_attempt_at <= ?)"
                "   OR (j.state = 'running' AND j.lease_expires_at <= ?))"
                "  AND NOT EXISTS (SELECT 1 FROM queue_pauses p"
                "   WHERE p.entity = j.entity AND p.kind = j.kind)"
                "  ORDER BY j.id LIMIT 1)"
                " RETURNING *",
                (owner, _at(policy.clock, policy.lease_s), now, kind, now, now),
            ).fetchone()
            if row is None:
                return None
            job = Job.from_row(row)
            if job.attempts <= policy.max_attempts:
                return job
            # Claimed more often than allowed: its workers kept dying (or it kept failing).
            conn.execute(
                f"UPDATE jobs SET state = 'dead', {_RELEASE},"
                " last_error = COALESCE(last_error, ?), updated_at = ? WHERE id = ?",
                (f"claimed {policy.max_attempts} times without finishing", now, job.id),
            )


def renew(db: Database, job: Job, owner: str, policy: Policy) -> bool:
    """Extend the lease; False if the job is no longer ours (it was reclaimed)."""
    with db.write() as conn:
        return _mine(conn, job, owner, "lease_expires_at = ?", _at(policy.clock, policy.lease_s))


def complete(db: Database, job: Job, owner: str) -> bool:
    with db.write() as conn:
        return _mine(conn, job, owner, f"state = 'done', last_error = NULL, {_RELEASE}")


def fail(db: Database, job: Job, owner: str, error: BaseException, policy: Policy) -> str:
    """Record a failed attempt: retry later with backoff, or dead after max_attempts."""
    message = f"{type(error).__name__}: {error}"[:2000]
    with db.write() as conn:
        if job.attempts >= policy.max_attempts:
            _mine(conn, job, owner, "state = 'dead', last_error = ?", message)
            return "dead"
        when = _at(policy.clock, policy.backoff(job.attempts))
        _mine(
            conn, job, owner, "state = 'retry', next_attempt_at = ?, last_error = ?", when, message
        )
        return "retry"


def pause(db: Database, job: Job, owner: str, reason: str) -> None:
    """The job waits and its (entity, kind) stops being claimed, every job of it waiting
    with the reason; the attempt is not counted."""
    with db.write() as conn:
        _mine(
            conn, job, owner, "state = 'waiting', attempts = attempts - 1, last_error = ?", reason
        )
        conn.execute(
            "INSERT INTO queue_pauses (entity, kind, reason, since) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (entity, kind) DO UPDATE SET reason = excluded.reason",
            (job.entity, job.kind, reason, timestamps.now()),
        )
        conn.execute(
            "UPDATE jobs SET state = 'waiting', next_attempt_at = NULL, last_error = ?,"
            " updated_at = ? WHERE entity = ? AND kind = ? AND state IN ('pending', 'retry')",
            (reason, timestamps.now(), job.entity, job.kind),
        )


def retry(db: Database, entity: str | None = None, dead: bool = False) -> int:
    """Put waiting and retry jobs (and dead ones, with `dead`, their attempts reset) back
    to pending now, and lift pauses. Returns how many jobs were put back."""
    return _requeue(db, ("retry", "waiting", "dead") if dead else ("retry", "waiting"), entity)


def retry_job(db: Database, entity: str, job_id: int) -> None:
    """Put one of the entity's dead (or retry, or waiting) jobs back to pending now, its
    attempts reset if it was dead. Another entity's job, or one not stuck, is not found."""
    with db.write() as conn:
        changed = conn.execute(
            f"UPDATE jobs SET state = 'pending', next_attempt_at = NULL, {_RELEASE},"
            " attempts = CASE state WHEN 'dead' THEN 0 ELSE attempts END, updated_at = ?"
            " WHERE id = ? AND entity = ? AND state IN ('retry', 'waiting', 'dead')",
            (timestamps.now(), job_id, entity),
        ).rowcount
    if not changed:
        raise NotFound(f"no dead, waiting or retrying job {job_id}", field="job")


def resume(db: Database) -> int:
    """At start: settings may have changed since a pause, so lift them all once."""
    return _requeue(db, ("waiting",), None)


def _requeue(db: Database, states: tuple[str, ...], entity: str | None) -> int:
    marks = ",".join("?" * len(states))
    scope, params = ("entity = ?", [entity]) if entity else ("1 = 1", [])
    with db.write() as conn:
        conn.execute(f"DELETE FROM queue_pauses WHERE {scope}", params)
        return conn.execute(
            f"UPDATE jobs SET state = 'pending', next_attempt_at = NULL, {_RELEASE},"
            " attempts = CASE state WHEN 'dead' THEN 0 ELSE attempts END, updated_at = ?"
            f" WHERE state IN ({marks}) AND {scope}",
            [timestamps.now(), *states, *params],
        ).rowcount


class DeadJob(BaseModel):
    id: int
    entity: str
    kind: str
    key: str
    attempts: int
    last_error: str | None
    updated_at: str


class Paused(BaseModel):
    entity: str
    kind: str
    reason: str
    since: str
    jobs: int = Field(0, description="The jobs that wait for it to be lifted.")


class Backlog(BaseModel):
    """Work an entity's memory is still going through, counted in what it works on
    rather than in jobs: a model change's vectors being made again, new turns' vectors,
    episodes waiting for extraction."""

    entity: str
    what: str = Field(
        description='What is being made: "search vectors", "graph vectors" or "graph episodes".'
    )
    model: str | None = Field(None, description="The model it is made with.")
    done: int | None = Field(None, description="Made so far (vectors); None for episodes.")
    total: int = Field(description="Vectors in all; episodes waiting.")
    clears_in_s: float | None = Field(
        None, description="Seconds until it is through, from the recent pace; None: unknown."
    )
    held: str | None = Field(None, description="Why it waits for a person (a pause).")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def said(self) -> str:
        """In words: "1,200 of 5,882", "12 waiting, through in about 40 min"."""
        if self.done is not None:
            return f"{self.done:,} of {self.total:,}"
        words = f"{self.total:,} waiting"
        if self.held:
            return f"{words}, held: {self.held}"
        if self.clears_in_s is not None:
            return f"{words}, through in about {_duration(self.clears_in_s)}"
        return words


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class QueueStatus(BaseModel):
    counts: dict[str, int]
    oldest_pending_age_s: float | None
    dead: list[DeadJob]
    paused: list[Paused]
    backlogs: list[Backlog] = Field(
        default_factory=list,
        description="Work not yet done, in its own units (engine/backlogs.py fills it).",
    )


def status(
    db: Database,
    entity: str | None = None,
    dead_limit: int = 50,
    clock: Callable[[], datetime] = _utcnow,
) -> QueueStatus:
    """Counts by state, the age of the oldest unfinished job (by `clock`), dead jobs and
    pauses."""
    scope, params = ("WHERE entity = ?", [entity]) if entity else ("", [])
    conn = db.conn
    counts = dict.fromkeys(STATES, 0)
    for row in conn.execute(f"SELECT state, COUNT(*) FROM jobs {scope} GROUP BY state", params):
        counts[row[0]] = row[1]
    unfinished = ",".join(f"'{s}'" for s in UNFINISHED)
    oldest = conn.execute(
        f"SELECT MIN(created_at) FROM jobs {scope or 'WHERE 1 = 1'} AND state IN ({unfinished})",
        params,
    ).fetchone()[0]
    dead = conn.execute(
        "SELECT id, entity, kind, key, attempts, last_error, updated_at FROM jobs"
        f" {scope or 'WHERE 1 = 1'} AND state = 'dead' ORDER BY id DESC LIMIT ?",
        [*params, dead_limit],
    )
    paused = conn.execute(
        "SELECT p.*, (SELECT COUNT(*) FROM jobs j WHERE j.entity = p.entity"
        " AND j.kind = p.kind AND j.state = 'waiting') AS jobs"
        f" FROM queue_pauses p {'WHERE p.entity = ?' if entity else ''} ORDER BY since",
        params,
    )
    return QueueStatus(
        counts=counts,
        oldest_pending_age_s=_age(oldest, clock()),
        dead=[DeadJob(**row) for row in dead],
        paused=[Paused(**row) for row in paused],
    )


Handler = Callable[[Job], None]


@dataclass
class _Trouble:
    """What last went wrong between a worker and the database, for /health."""

    doing: str  # claiming, running, recording
    error: str
    since: str


class Workers:
    """Worker threads, each serving one job kind: claim, run with a renewed lease, record
    the outcome. Started and stopped by engine.runtime with the server."""

    def __init__(self, db: Database, policy: Policy):
        self.db = db
        self.policy = policy
        self.owner = f"worker-{uuid.uuid4().hex[:8]}"
        self._handlers: list[tuple[str, Handler, int, threading.Event | None]] = []
        self._threads: dict[str, list[threading.Thread]] = {}
        self._stop = threading.Event()
        self._active: dict[int, Job] = {}
        self._active_lock = threading.Lock()
        self._troubles: dict[str, _Trouble] = {}
        self.failures = 0
        """Outcomes the database refused to record (locked, full): each such job runs again
        once its lease expires, and the worker goes on."""

    def add(
        self,
        kind: str,
        handler: Handler,
        concurrency: int = 1,
        ready: threading.Event | None = None,
    ) -> None:
        """Serve `kind` with `handler`; with `ready`, claim no job before it is set (what
        the handler needs is still starting: its jobs wait in the queue, untouched)."""
        self._handlers.append((kind, handler, concurrency, ready))

    def start(self) -> None:
        self._spawn(self._keep_leases, "leases", "lease-keeper")
        for kind, handler, concurrency, ready in self._handlers:
            for n in range(concurrency):
                self._spawn(self._serve, kind, f"{kind}-{n}", kind, handler, ready)

    def _spawn(self, target, group: str, name: str, *args) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.setdefault(group, []).append(thread)

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        for threads in self._threads.values():
            for thread in threads:
                thread.join(timeout)
        self._threads.clear()

    def health(self) -> dict:
        """The "workers" component of /health: per job kind, its threads alive and what
        last went wrong with the database (claiming, running or recording a job), until a
        job of that kind finishes with its outcome recorded. A thread that ended is down;
        a database that refuses the workers' writes makes them failing."""
        kinds, status = {}, "ok"
        for group, threads in self._threads.items():
            alive = sum(thread.is_alive() for thread in threads)
            state = {"status": "ok", "threads": len(threads), "alive": alive}
            trouble = self._troubles.get(group)
            if trouble is not None:
                state.update(status="failing", doing=trouble.doing, error=trouble.error)
                state["since"] = trouble.since
            if alive < len(threads) and not self._stop.is_set():
                state["status"] = "down"
            kinds[group] = state
        if any(k["status"] == "down" for k in kinds.values()):
            status = "down"
        elif any(k["status"] == "failing" for k in kinds.values()):
            status = "failing"
        return {"status": status, "unrecorded_outcomes": self.failures, "kinds": kinds}

    def _trouble(self, kind: str, doing: str, exc: BaseException) -> None:
        previous = self._troubles.get(kind)
        since = previous.since if previous is not None else timestamps.now()
        self._troubles[kind] = _Trouble(doing, f"{type(exc).__name__}: {exc}"[:500], since)

    def _serve(self, kind: str, handler: Handler, ready: threading.Event | None = None) -> None:
        claiming = FailingLoop(f"{threading.current_thread().name} claiming", self.policy.poll_s)
        while not self._stop.is_set():
            if ready is not None and not ready.is_set():  # its part is still starting
                self._stop.wait(self.policy.poll_s)
                continue
            if self.db.out_of_space() is not None:  # wait for room, not burn attempts
                self._stop.wait(self.policy.poll_s)
                continue
            try:
                job = claim(self.db, kind, self.owner, self.policy)
            except Exception as exc:  # locked, full: claimed again, later each time
                self._trouble(kind, "claiming", exc)
                self._stop.wait(claiming.failed(exc))
                continue
            else:
                claiming.worked()
                trouble = self._troubles.get(kind)
                if trouble is not None and trouble.doing == "claiming":
                    del self._troubles[kind]
            if job is None:
                self._stop.wait(self.policy.poll_s)
                continue
            try:
                self.run(job, handler)
            except Exception as exc:  # no exception ends a worker: the job is still leased
                self.failures += 1
                self._trouble(kind, "recording", exc)
                log.exception(
                    "the outcome of %s job %s could not be recorded; it runs again when its"
                    " lease expires",
                    kind,
                    job.id,
                )
                self._stop.wait(self.policy.poll_s)

    def run(self, job: Job, handler: Handler) -> str:
        """Run one claimed job to an outcome; returns the job's new state."""
        with self._active_lock:
            self._active[job.id] = job
        try:
            handler(job)
        except Pause as exc:
            pause(self.db, job, self.owner, exc.reason)
            log.warning("%s job %s paused for %s: %s", job.kind, job.id, job.entity, exc.reason)
            state = "waiting"
        except Exception as exc:
            state = fail(self.db, job, self.owner, exc, self.policy)
            log.warning("%s job %s failed (%s): %s", job.kind, job.id, state, exc)
            if _database_refused(exc):  # the worker cannot do its work, not the job
                self._trouble(job.kind, "running", exc)
                return state
        else:
            if not complete(self.db, job, self.owner):
                log.warning("%s job %s finished after its lease was lost", job.kind, job.id)
            state = "done"
        finally:
            with self._active_lock:
                self._active.pop(job.id, None)
        self._troubles.pop(job.kind, None)
        return state

    def _keep_leases(self) -> None:
        """Renew the lease of every running job a third of the way through it."""
        while not self._stop.wait(self.policy.lease_s / 3):
            with self._active_lock:
                running = list(self._active.values())
            for job in running:
                try:
                    renew(self.db, job, self.owner, self.policy)
                except Exception as exc:
                    self._trouble("leases", "renewing", exc)
                    log.exception("renewing the lease of job %s failed", job.id)
                else:
                    self._troubles.pop("leases", None)


def _database_refused(exc: BaseException) -> bool:
    """Whether a handler failed because the database refused a write (locked, full)."""
    return isinstance(exc, sqlite3.Error) or (
        isinstance(exc, Unavailable) and exc.component == "database"
    )


def _mine(conn: sqlite3.Connection, job: Job, owner: str, assignments: str, *values) -> bool:
    """Update a job only while this owner still holds its lease."""
    return bool(
        conn.execute(
            f"UPDATE jobs SET {assignments}, updated_at = ?"
            " WHERE id = ? AND lease_owner = ? AND state = 'running'",
            (*values, timestamps.now(), job.id, owner),
        ).rowcount
    )


def _at(clock: Callable[[], datetime], seconds_from_now: float = 0.0) -> str:
    return (clock() + timedelta(seconds=seconds_from_now)).strftime(timestamps.FORMAT)


def _age(stamp: str | None, now: datetime) -> float | None:
    if stamp is None:
        return None
    then = timestamps.parse(stamp)
    return round((now - then).total_seconds(), 3)


# Asked by graph: its jobs counted by state (engine.graph.backend, episodes, texture).


def counts(
    conn: sqlite3.Connection,
    kind: str,
    entity: str | None = None,
    *,
    states: tuple[str, ...] = STATES,
    key_suffix: str | None = None,
) -> dict[str, int]:
    """The jobs of `kind` in each of `states` (0 where none): of one entity, and of those
    only the ones whose key ends with `key_suffix`, where given."""
    marks = ",".join("?" * len(states))
    where = [f"kind = ? AND state IN ({marks})"]
    params: list[Any] = [kind, *states]
    if entity is not None:
        where.append("entity = ?")
        params.append(entity)
    if key_suffix is not None:
        where.append("substr(key, ?) = ?")
        params += [-len(key_suffix), key_suffix]
    found = dict.fromkeys(states, 0)
    # `+state`: grouped without the index on state, SQLite reads an entity's jobs of the
    # states asked through the index on (entity, state): 0.1 ms, not 10-25, at 200k jobs.
    for state, n in conn.execute(
        f"SELECT state, COUNT(*) FROM jobs WHERE {' AND '.join(where)} GROUP BY +state", params
    ):
        found[state] = n
    return found


# Asked by graph: how its episodes' queue stands and how fast it went (engine.graph.backlog).


@dataclass
class Standing:
    """Where a kind's unfinished jobs stand: `jobs` (waiting included), `ready` of them
    (their entity not paused), `ahead` (other entities' ready jobs claimed before the
    entity's last, since claims go oldest first), and the paused entities with why."""

    jobs: int
    ready: int
    ahead: int
    paused: dict[str, str]


def standing(db: Database, kind: str, entity: str | None = None) -> Standing:
    """How the unfinished jobs of `kind` stand, of one entity or of every one."""
    conn = db.conn
    paused = dict(conn.execute("SELECT entity, reason FROM queue_pauses WHERE kind = ?", (kind,)))
    ready = (
        "kind = ? AND state IN ('pending', 'running', 'retry') AND entity NOT IN"
        " (SELECT entity FROM queue_pauses WHERE kind = ?)"
    )
    scope, params = ("entity = ?", [entity]) if entity is not None else ("1 = 1", [])
    (jobs,) = conn.execute(
        f"SELECT COUNT(*) FROM jobs WHERE kind = ? AND state IN ({_UNFINISHED}) AND {scope}",
        [kind, *params],
    ).fetchone()
    own, last = conn.execute(
        f"SELECT COUNT(*), MAX(id) FROM jobs WHERE {ready} AND {scope}", [kind, kind, *params]
    ).fetchone()
    ahead = 0
    if entity is not None and last is not None:
        (ahead,) = conn.execute(
            f"SELECT COUNT(*) FROM jobs WHERE {ready} AND entity != ? AND id < ?",
            [kind, kind, entity, last],
        ).fetchone()
    return Standing(jobs, own, ahead, paused)


def finished(db: Database, kind: str, latest: int) -> list[tuple[str, str]]:
    """(created_at, updated_at) of the `latest` finished jobs of `kind` (by id: the
    table's own order, no sort of every finished job), in the order they finished."""
    rows = db.conn.execute(
        "SELECT created_at, updated_at FROM jobs WHERE kind = ? AND state = 'done'"
        " ORDER BY id DESC LIMIT ?",
        (kind, latest),
    ).fetchall()
    return sorted(((r[0], r[1]) for r in rows), key=lambda row: row[1])


def finished_since(db: Database, kind: str, entity: str, since: str) -> int:
    """How many jobs of `kind` the entity finished at or after `since`."""
    (n,) = db.conn.execute(
        "SELECT COUNT(*) FROM jobs WHERE kind = ? AND entity = ? AND state = 'done'"
        " AND updated_at >= ?",
        (kind, entity, since),
    ).fetchone()
    return n
