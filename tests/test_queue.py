"""The durable queue: jobs finish once, retry with backoff, wait on a pause, die with
their error, and survive their worker being killed."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace

import pytest

from engine.capture import entities
from engine.kernel.config import Settings
from engine.store import queue
from engine.store.db import Database
from engine.store.queue import Pause, Policy, Workers
from tests.conftest import Clock, wait_for

FAST = Policy(lease_s=1.0, max_attempts=4, backoff_initial_s=0.05, backoff_max_s=0.2, poll_s=0.02)


@pytest.fixture
def db(tmp_path):
    db = Database.open(Settings(data_dir=tmp_path / "data"))
    entities.create(db, "lyra")
    entities.create(db, "nexus")
    yield db
    db.close()


def add(db, key, entity="lyra", kind="work", payload=None):
    with db.write() as conn:
        queue.enqueue(conn, entity, kind, key, payload or {"key": key})


def states(db):
    return {row[0]: row[1] for row in db.conn.execute("SELECT key, state FROM jobs")}


def run_workers(db, handler, policy=FAST, concurrency=1, kind="work"):
    workers = Workers(db, policy)
    workers.add(kind, handler, concurrency)
    workers.start()
    return workers


def test_enqueue_is_idempotent_and_transactional(db):
    add(db, "a")
    add(db, "a", payload={"other": True})
    assert db.conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 1
    with pytest.raises(RuntimeError), db.write() as conn:
        queue.enqueue(conn, "lyra", "work", "b", {})
        raise RuntimeError("the event's transaction failed")
    assert "b" not in states(db)


def test_jobs_run_once_each(db):
    seen = []
    for n in range(20):
        add(db, f"j{n}")
    workers = run_workers(db, lambda job: seen.append(job.key), concurrency=3)
    try:
        wait_for(lambda: set(states(db).values()) == {"done"})
    finally:
        workers.stop()
    assert sorted(seen) == sorted(f"j{n}" for n in range(20))


def test_failures_retry_with_backoff_then_succeed(db):
    calls = []

    def flaky(job):
        calls.append(time.monotonic())
        if len(calls) <= 2:
            raise ConnectionError("LLM 500")

    add(db, "x")
    workers = run_workers(db, flaky)
    try:
        wait_for(lambda: states(db) == {"x": "done"})
    finally:
        workers.stop()
    assert len(calls) == 3
    assert calls[1] - calls[0] >= 0.04  # waited for the backoff
    row = db.conn.execute("SELECT attempts, last_error FROM jobs").fetchone()
    assert tuple(row) == (3, None)


def test_always_failing_job_is_dead_with_its_error_and_can_be_retried(db):
    add(db, "doomed")
    workers = run_workers(db, lambda job: 1 / 0)
    try:
        wait_for(lambda: states(db) == {"doomed": "dead"})
    finally:
        workers.stop()
    status = queue.status(db)
    assert status.counts["dead"] == 1
    [dead] = status.dead
    assert dead.attempts == FAST.max_attempts and "ZeroDivisionError" in dead.last_error

    assert queue.retry(db) == 0  # without --dead, dead jobs stay dead
    assert queue.retry(db, dead=True) == 1
    row = db.conn.execute("SELECT state, attempts FROM jobs").fetchone()
    assert tuple(row) == ("pending", 0)


def test_pause_stops_one_entity_and_kind_without_burning_attempts(db):
    def needs_key(job):
        if job.entity == "lyra":
            raise Pause("LLM_API_KEY refused (401)")

    for n in range(3):
        add(db, f"l{n}", entity="lyra")
        add(db, f"n{n}", entity="nexus")
    workers = run_workers(db, needs_key)
    try:
        wait_for(lambda: all(states(db)[f"n{n}"] == "done" for n in range(3)))
        assert queue.claim(db, "work", "another-worker", FAST) is None  # none is claimable
        lyra = {k: v for k, v in states(db).items() if k.startswith("l")}
        assert sorted(lyra.values()) == ["waiting"] * 3  # every job of the paused queue
        status = queue.status(db, "lyra")
        assert [(p.kind, p.reason) for p in status.paused] == [
            ("work", "LLM_API_KEY refused (401)")
        ]
        assert status.counts["waiting"] == 3 and status.counts["pending"] == 0
        waiting = db.conn.execute("SELECT attempts, last_error FROM jobs WHERE state = 'waiting'")
        assert {tuple(row) for row in waiting} == {(0, "LLM_API_KEY refused (401)")}
        add(db, "l3")  # queued while the pause lasts: it waits too, and says why
        assert states(db)["l3"] == "waiting"
        assert queue.status(db, "lyra").counts["waiting"] == 4
        assert queue.status(db, "nexus").paused == []
    finally:
        workers.stop()


def test_retry_lifts_the_pause(db):
    fixed = threading.Event()

    def handler(job):
        if not fixed.is_set():
            raise Pause("no LLM configured")

    add(db, "a")
    add(db, "b")
    workers = run_workers(db, handler)
    try:
        wait_for(lambda: "waiting" in states(db).values())
        fixed.set()
        assert queue.retry(db, "lyra") == 2  # the one paused and the one waiting behind it
        wait_for(lambda: set(states(db).values()) == {"done"})
    finally:
        workers.stop()


def test_lease_is_renewed_while_a_long_job_runs(db):
    clock = Clock()
    # A short lease (by the clock) so that the keeper, which renews every lease_s / 3 of
    # real time, comes round quickly; the lease itself only runs out when the clock moves.
    policy = replace(FAST, lease_s=0.15, clock=clock)
    runs = []

    def lease():
        return db.conn.execute("SELECT lease_expires_at FROM jobs").fetchone()[0]

    def slow(job):  # runs for 2.5 leases, each step half a lease after the last renewal
        runs.append(job.key)
        for _ in range(5):
            expires = lease()
            clock.advance(policy.lease_s / 2)
            wait_for(lambda: lease() != expires, what="the lease to be renewed")  # noqa: B023

    add(db, "long")
    first, second = run_workers(db, slow, policy), run_workers(db, slow, policy)
    try:
        wait_for(lambda: states(db) == {"long": "done"})
    finally:
        first.stop()
        second.stop()
    assert runs == ["long"]


def test_expired_lease_is_claimed_again_and_the_late_finisher_is_ignored(db):
    clock = Clock()
    policy = replace(FAST, clock=clock)
    add(db, "orphan")
    stale = queue.claim(db, "work", "dead-worker", policy)
    assert stale is not None and queue.claim(db, "work", "other", policy) is None
    clock.advance(policy.lease_s + 0.1)
    again = queue.claim(db, "work", "other", policy)
    assert again is not None and again.id == stale.id and again.attempts == 2
    assert queue.complete(db, stale, "dead-worker") is False
    assert queue.complete(db, again, "other") is True
    assert states(db) == {"orphan": "done"}


def test_worker_process_killed_mid_job_is_reclaimed_and_finishes_once(db, tmp_path, processes):
    add(db, "survivor")
    started = tmp_path / "started"
    script = textwrap.dedent(
        f"""
        import time, pathlib
        from engine.store.db import Database
        from engine.store.queue import Workers, Policy
        db = Database(pathlib.Path({str(db.path)!r}))
        def hang(job):
            pathlib.Path({str(started)!r}).write_text(job.key)
            time.sleep(600)
        workers = Workers(db, Policy(lease_s={FAST.lease_s}, poll_s=0.02))
        workers.add("work", hang)
        workers.start()
        time.sleep(600)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        wait_for(started.exists)
        assert states(db) == {"survivor": "running"}
        child.send_signal(signal.SIGKILL)
        child.wait()
    finally:
        child.kill()
    clock = Clock()
    clock.advance(FAST.lease_s + 0.1)  # the dead worker's lease has run out
    finished = []
    workers = run_workers(db, lambda job: finished.append(job.key), replace(FAST, clock=clock))
    try:
        wait_for(lambda: states(db) == {"survivor": "done"})
    finally:
        workers.stop()
    assert finished == ["survivor"]
    assert db.conn.execute("SELECT attempts FROM jobs").fetchone()[0] == 2


def test_a_job_that_keeps_killing_its_worker_ends_dead(db):
    add(db, "poison")
    clock = Clock()
    policy = Policy(lease_s=0.2, max_attempts=2, poll_s=0.02, clock=clock)
    for _ in range(policy.max_attempts):
        assert queue.claim(db, "work", "doomed-worker", policy) is not None
        clock.advance(policy.lease_s + 0.05)
    assert queue.claim(db, "work", "next", policy) is None
    [dead] = queue.status(db).dead
    assert dead.key == "poison" and "without finishing" in dead.last_error


def test_backoff_grows_with_jitter_and_is_capped():
    policy = Policy(backoff_initial_s=1, backoff_max_s=30)
    delays = [policy.backoff(n) for n in range(1, 12)]
    assert delays[0] >= 1 and delays[3] > delays[0]
    for failed, delay in enumerate(delays, 1):  # 1 s doubled per failure, up to 1 s of jitter
        assert min(2 ** (failed - 1), 30) <= delay <= min(2 ** (failed - 1) + 1, 30)
    assert max(delays) <= 30 and delays[-1] == 30
    assert len({policy.backoff(3) for _ in range(20)}) > 1  # jittered


def test_status_counts_and_oldest_age(db):
    add(db, "a")
    add(db, "b", entity="nexus")
    clock = Clock()  # now, or just after the jobs were created
    clock.advance(0.05)
    status = queue.status(db, "lyra", clock=clock)
    assert status.counts["pending"] == 1 and sum(status.counts.values()) == 1
    assert status.oldest_pending_age_s >= 0.05
    assert queue.status(db).counts["pending"] == 2


def test_rest_queue_is_per_entity(server, make_client):
    lyra, nexus = make_client(), make_client()
    with server.db.write() as conn:
        queue.enqueue(conn, lyra.entity, "unregistered-kind", "k1", {})
        conn.execute(
            "UPDATE jobs SET state = 'dead', last_error = 'boom', attempts = 8 WHERE key = 'k1'"
        )
    mine = lyra.get("/v1/queue").json()
    assert mine["counts"]["dead"] == 1 and mine["dead"][0]["last_error"] == "boom"
    theirs = nexus.get("/v1/queue").json()
    assert theirs["counts"]["dead"] == 0 and theirs["dead"] == []
    assert nexus.post("/v1/queue/retry", json={"dead": True}).json() == {"requeued": 0}
    assert lyra.post("/v1/queue/retry", json={"dead": True}).json() == {"requeued": 1}
    assert lyra.get("/v1/queue").json()["counts"]["pending"] == 1
    bad = lyra.post("/v1/queue/retry", json={"dead": "maybe"})
    assert bad.status_code == 422 and bad.json()["problems"][0]["field"] == "dead"


def test_cli_queue_shows_dead_jobs_and_retries(server, make_client):
    client = make_client()
    with server.db.write() as conn:
        queue.enqueue(conn, client.entity, "unregistered-kind", "cli-job", {})
        conn.execute(
            "UPDATE jobs SET state = 'dead', last_error = 'LLM said no' WHERE key = 'cli-job'"
        )
    shown = server.pps("queue", "--entity", client.entity)
    assert "dead 1" in shown and "LLM said no" in shown and "cli-job" in shown
    assert server.pps("queue", "retry", "--dead", "--entity", client.entity).startswith("1 ")
    assert "pending 1" in server.pps("queue", "--entity", client.entity)


def test_a_job_whose_outcome_cannot_be_recorded_runs_again_and_the_worker_lives(tmp_path):
    """The database refusing the worker's write (locked here; full disks fail the same way)
    must not end the worker thread: the job stays leased and runs again once it expires."""
    db = Database(tmp_path / "pps.sqlite3", busy_timeout_ms=50)
    db.migrate()
    entities.create(db, "lyra")
    add(db, "stubborn")
    clock, runs, blocker = Clock(), [], None

    def handler(job):
        nonlocal blocker
        runs.append(job.key)
        if len(runs) == 1:  # the database is busy elsewhere when the outcome is written
            blocker = sqlite3.connect(db.path, isolation_level=None, check_same_thread=False)
            blocker.execute("BEGIN EXCLUSIVE")

    workers = run_workers(db, handler, policy=replace(FAST, clock=clock))
    try:
        wait_for(lambda: runs == ["stubborn"] and blocker is not None, what="the first run")
        wait_for(lambda: workers.failures > 0, what="the refused write to be noticed")
        health = workers.health()  # /health's "workers": the kind, what failed, and why
        assert health["status"] == "failing" and health["unrecorded_outcomes"] >= 1
        work = health["kinds"]["work"]
        assert work["status"] == "failing" and work["doing"] == "recording"
        assert "locked" in work["error"] and work["alive"] == work["threads"] == 1
        blocker.rollback()
        clock.advance(FAST.lease_s + 1)  # the lease of the unrecorded run expires
        wait_for(lambda: states(db) == {"stubborn": "done"}, what="the job to run again")
        assert runs == ["stubborn", "stubborn"]
        wait_for(lambda: workers.health()["status"] == "ok", what="the worker to be ok again")
    finally:
        workers.stop()
        db.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_worker_thread_that_ended_is_down_in_health(db):
    """Nothing a handler raises ends a worker, short of what ends a thread (SystemExit);
    should one end all the same, /health names its kind as down."""
    add(db, "fatal")

    def handler(job):
        raise SystemExit("gone")

    workers = run_workers(db, handler, concurrency=2)
    try:
        health = wait_for(
            lambda: (h := workers.health())["status"] == "down" and h, what="the thread to end"
        )
        assert health["kinds"]["work"] == {"status": "down", "threads": 2, "alive": 1}
        assert health["kinds"]["leases"]["status"] == "ok"
    finally:
        workers.stop()


def test_closing_the_database_waits_for_a_write_in_progress(db):
    """A worker that outlives the runtime's stop (its job ran past the join's timeout on
    a busy machine) is still writing when the server closes the database: its write
    commits, rather than have its connection closed under it (which crashed the
    process)."""
    writing, finish = threading.Event(), threading.Event()

    def worker() -> None:
        with db.write() as conn:
            conn.execute(
                "INSERT INTO entities (name, token_hash, created_at) VALUES ('late', 'x', 'y')"
            )
            writing.set()
            finish.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    writing.wait(10)
    closing = threading.Thread(target=db.close)
    closing.start()
    closing.join(0.5)  # time to close under the write, were it not waited for
    assert closing.is_alive(), "close did not wait for the write in progress"
    finish.set()
    thread.join(10)
    closing.join(10)
    reopened = sqlite3.connect(db.path)
    assert reopened.execute("SELECT count(*) FROM entities WHERE name = 'late'").fetchone()[0] == 1
