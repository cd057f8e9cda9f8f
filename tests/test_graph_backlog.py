"""The graph's backlog as a user waiting for it sees it: the queue's order across entities,
a paused entity beside one that goes on, and the estimate of when an entity's backlog
clears (engine.graph.backlog), from the pace the queue has kept and the jobs before it.

The queue is the real one (SQLite, engine.store.queue); the jobs are `graph_episode`
jobs, their handler a stand-in that takes the time the test gives it (the estimate reads
only the queue's own records, so the graph and the LLM are no part of it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine import backlogs
from engine.capture import entities
from engine.graph import backlog
from engine.graph.episodes import JOB_KIND
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.llm import budget
from engine.store import queue
from engine.store.db import Database
from engine.store.queue import Pause, Policy, Workers
from tests.conftest import wait_for

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
FAST = Policy(lease_s=1.0, max_attempts=3, backoff_initial_s=0.05, backoff_max_s=0.2, poll_s=0.02)


@pytest.fixture
def db(tmp_path):
    db = Database.open(Settings(data_dir=tmp_path / "data"))
    for name in ("lyra", "nexus", "orion"):
        entities.create(db, name)
    yield db
    db.close()


def stamp(moment: datetime) -> str:
    return moment.strftime(timestamps.FORMAT)


def queue_episode(db, entity: str, key: str, at: datetime | None = None) -> int:
    with db.write() as conn:
        queue.enqueue(conn, entity, JOB_KIND, key, {"episode": key})
        job_id = conn.execute("SELECT id FROM jobs WHERE key = ?", (key,)).fetchone()[0]
        if at is not None:
            conn.execute(
                "UPDATE jobs SET created_at = ?, updated_at = ? WHERE id = ?",
                (stamp(at), stamp(at), job_id),
            )
    return job_id


def finished(db, job_id: int, at: datetime) -> None:
    """The job was extracted and finished at `at`, as the queue records it."""
    with db.write() as conn:
        conn.execute(
            "UPDATE jobs SET state = 'done', updated_at = ? WHERE id = ?", (stamp(at), job_id)
        )


def history(db, entity: str, gaps: list[float], start: datetime = NOON) -> datetime:
    """Episodes all queued at `start`, finished one after another `gaps` seconds apart;
    returns when the last finished."""
    ids = [queue_episode(db, entity, f"{entity}-old-{n}", start) for n in range(len(gaps))]
    at = start
    for job_id, gap in zip(ids, gaps, strict=True):
        at += timedelta(seconds=gap)
        finished(db, job_id, at)
    return at


def test_the_queue_runs_graph_episodes_oldest_first_across_entities(db):
    """No per-entity fairness: an entity's episode queued after another's backlog waits
    for all of it (docs/extraction.md, "The queue when an episode takes minutes")."""
    for n in range(3):
        queue_episode(db, "lyra", f"lyra-{n}")
    queue_episode(db, "nexus", "nexus-0")
    queue_episode(db, "lyra", "lyra-3")
    order: list[str] = []
    workers = Workers(db, FAST)
    workers.add(JOB_KIND, lambda job: order.append(job.key))
    workers.start()
    try:
        wait_for(lambda: len(order) == 5, 10, "every episode extracted")
    finally:
        workers.stop()
    assert order == ["lyra-0", "lyra-1", "lyra-2", "nexus-0", "lyra-3"]


def test_a_spent_budget_holds_one_entity_and_the_others_go_on(db):
    """The budget is checked before each episode: the one that would start after it is
    spent pauses that entity's graph jobs; another entity's are extracted meanwhile."""
    for n in range(3):
        queue_episode(db, "lyra", f"lyra-{n}")
    queue_episode(db, "nexus", "nexus-0")
    ran: list[str] = []

    def handle(job):
        if job.entity == "lyra" and len(ran) >= 1:
            raise Pause(f"{budget.BUDGET_SPENT} for lyra (1 of 1 calls)")
        ran.append(job.key)

    workers = Workers(db, FAST)
    workers.add(JOB_KIND, handle)
    workers.start()
    try:
        wait_for(lambda: "nexus-0" in ran, 10, "the other entity's episode extracted")
    finally:
        workers.stop()
    states = dict(db.conn.execute("SELECT key, state FROM jobs").fetchall())
    assert states == {
        "lyra-0": "done",
        "lyra-1": "waiting",
        "lyra-2": "waiting",
        "nexus-0": "done",
    }
    held = backlog.estimate(db, Settings(), "lyra", clock=lambda: NOON)
    assert held.jobs == 2 and held.clears_in_s is None
    assert held.held is not None and held.held.startswith(budget.BUDGET_SPENT)


def test_no_pace_yet_means_no_estimate_and_an_empty_backlog_is_clear(db):
    queue_episode(db, "lyra", "lyra-0")
    unknown = backlog.estimate(db, Settings(), "lyra", clock=lambda: NOON)
    assert (unknown.jobs, unknown.sampled, unknown.clears_in_s) == (1, 0, None)
    clear = backlog.estimate(db, Settings(), "nexus", clock=lambda: NOON)
    assert (clear.jobs, clear.clears_in_s, clear.clears_at) == (0, 0.0, stamp(NOON))


def test_the_estimate_is_the_recent_pace_times_the_jobs_before_its_last(db):
    # Ten episodes finished 120 s apart, one slow outlier among them (a retry, a pause).
    last = history(db, "orion", [120.0] * 9 + [3600.0])
    now = last + timedelta(seconds=5)
    # nexus queued 2, then lyra 3, then nexus 1 more: lyra's last waits for 2 of nexus's.
    for n in range(2):
        queue_episode(db, "nexus", f"nexus-{n}")
    for n in range(3):
        queue_episode(db, "lyra", f"lyra-{n}")
    queue_episode(db, "nexus", "nexus-2")
    got = backlog.estimate(db, Settings(), "lyra", clock=lambda: now)
    assert (got.jobs, got.ahead, got.sampled) == (3, 2, 10)
    assert got.seconds_per_episode == 120.0  # the median: the outlier does not move it
    assert got.clears_in_s == 5 * 120.0
    assert got.clears_at == stamp(now + timedelta(seconds=600))
    everyone = backlog.estimate(db, Settings(), clock=lambda: now)
    assert (everyone.jobs, everyone.clears_in_s) == (6, 6 * 120.0)
    shown = backlogs.queue_status(db, Settings(), "lyra").backlogs  # pps queue, the queue page
    assert [(b.what, b.said) for b in shown] == [
        ("graph episodes", "3 waiting, through in about 10 min")
    ], shown


def test_time_the_queue_sat_idle_is_not_pace(db):
    """An episode queued long after the one before it finished is timed from when it was
    queued: a quiet night is no slow extraction."""
    first = history(db, "orion", [60.0])
    later = first + timedelta(hours=8)
    job = queue_episode(db, "orion", "orion-late", later)
    finished(db, job, later + timedelta(seconds=60))
    queue_episode(db, "lyra", "lyra-0")
    got = backlog.estimate(db, Settings(), "lyra", clock=lambda: later + timedelta(seconds=61))
    assert got.seconds_per_episode == 60.0 and got.sampled == 2


def test_a_daily_budget_that_runs_out_moves_the_end_to_the_next_days(db):
    # lyra extracted 2 episodes today at 10 calls each; the budget is 50 calls a day.
    last = history(db, "lyra", [100.0, 100.0])
    budget.spend(db, "lyra", budget.Usage(calls=20, tokens=0))
    for n in range(7):
        queue_episode(db, "lyra", f"lyra-{n}")
    settings = Settings(graph_daily_calls=50)
    now = last + timedelta(seconds=1)
    got = backlog.estimate(db, settings, "lyra", clock=lambda: now)
    # 3 more fit today; the other 4 wait: 5 a day, so all 4 tomorrow, after midnight.
    midnight = datetime(2026, 3, 3, tzinfo=UTC)
    assert got.clears_in_s == round((midnight - now).total_seconds() + 4 * 100.0, 1)
    assert got.budget is not None and "fits 3 more of its 7 episodes today" in got.budget
    without = backlog.estimate(db, Settings(), "lyra", clock=lambda: now)
    assert without.clears_in_s == 7 * 100.0 and without.budget is None
