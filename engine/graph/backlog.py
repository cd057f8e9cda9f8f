"""When an entity's graph backlog clears: an estimate from how fast the queue has been
finishing episodes lately and the `graph_episode` jobs still to run, for `pps queue`,
/health and the queue page.

How the queue feeds the graph (engine.store.queue, engine.graph.episodes, .texture):
- Order: workers claim the oldest ready job of the kind by id, whatever its entity: first
  queued, first extracted, across entities (no per-entity turns). A job whose attempt
  failed waits out its backoff while later ones run, so episodes can land out of order.
- Fairness: none between entities. One entity's long backlog (an import, a replay) runs
  before an episode another entity closes after it. Episodes of one entity are extracted
  one at a time (engine.graph.store holds a lock per entity), so a second worker
  (PPS_GRAPH_CONCURRENCY) that claims the same entity's next job waits for the first.
- An episode that takes minutes keeps its job: the lease is renewed a third of the way
  through, for as long as it runs; a worker that dies lets the lease lapse and the job is
  claimed again (up to PPS_QUEUE_MAX_ATTEMPTS claims).
- The daily budget (PPS_GRAPH_DAILY_CALLS, _TOKENS) is checked before each episode, not
  during one: the episode that crosses it finishes, and the next pauses the entity's
  graph jobs (each `waiting`) until 00:00 UTC; other entities go on.

The estimate: the gaps between recent completions, each from the later of the job's
creation and the completion before it (time the queue sat idle is left out), are how
long an episode takes at the parallelism the queue ran with, failed attempts and retries
included; their median times the jobs to run before this entity's last one is done (its
own and, since claims go oldest first, every other entity's queued before it) is the
time left. A paused entity's backlog does not clear by itself: `held` says why. With a
daily budget, the calls (tokens) an episode has cost today say how many more fit in it;
past that, the rest waits for the next UTC days.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field

from engine.graph.episodes import JOB_KIND
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.llm import budget
from engine.store import queue
from engine.store.db import Database

RECENT = 20
"""How many of the latest finished episodes the pace is measured over."""


class Estimate(BaseModel):
    entity: str | None = Field(description="The entity; None: every entity's graph backlog.")
    jobs: int = Field(description="Its graph episodes not yet extracted (running included).")
    ahead: int = Field(description="Other entities' episodes the queue takes before its last.")
    seconds_per_episode: float | None = Field(
        description="The median gap between recent completions; None before any."
    )
    sampled: int = Field(description="How many recent completions the median is of.")
    clears_in_s: float | None = Field(
        description="Seconds until its last queued episode is extracted; 0 when none waits;"
        " None when unknown (no pace yet) or held."
    )
    clears_at: str | None = Field(description="When, as a stored timestamp (UTC).")
    held: str | None = Field(description="Why its backlog waits for a person (a pause).")
    budget: str | None = Field(
        None, description="What the daily LLM budget does to it, in words, where it limits."
    )


def _utcnow() -> datetime:
    return datetime.now(UTC)


def estimate(
    db: Database,
    settings: Settings,
    entity: str | None = None,
    *,
    recent: int = RECENT,
    clock: Callable[[], datetime] = _utcnow,
) -> Estimate:
    """How long the graph backlog of `entity` (of every entity: None) has left to run."""
    now = clock()
    stands = queue.standing(db, JOB_KIND, entity)
    jobs, own, ahead, paused = stands.jobs, stands.ready, stands.ahead, stands.paused
    pace, sampled = _pace(db, recent)
    if entity is not None:
        held = paused.get(entity)
    else:  # the entities whose jobs wait are left out of the time; the first says why
        held = next(iter(paused.values()), None) if jobs > own else None
    base = Estimate(
        entity=entity,
        jobs=jobs,
        ahead=ahead,
        seconds_per_episode=pace,
        sampled=sampled,
        clears_in_s=None,
        clears_at=None,
        held=held,
    )
    if held is not None and entity is not None:
        return base
    if not own:
        if held is None:
            base.clears_in_s, base.clears_at = 0.0, now.strftime(timestamps.FORMAT)
        return base
    if pace is None:
        return base
    seconds = (own + ahead) * pace
    if entity is not None:
        seconds, base.budget = _within_budget(db, settings, entity, own, ahead, pace, now)
    base.clears_in_s = round(seconds, 1)
    base.clears_at = (now + timedelta(seconds=seconds)).strftime(timestamps.FORMAT)
    return base


def _pace(db: Database, recent: int) -> tuple[float | None, int]:
    """The median gap between the latest `recent` completions of graph episodes, and how
    many gaps it is of."""
    rows = queue.finished(db, JOB_KIND, recent + 1)
    gaps = []
    for n, (created, ended) in enumerate(rows):
        began = created if n == 0 else max(created, rows[n - 1][1])
        if n == 0 and len(rows) > recent:
            continue  # only the end of the one before counts
        gaps.append(max(timestamps.seconds_between(began, ended), 0.0))
    if not gaps:
        return None, 0
    return round(statistics.median(gaps), 3), len(gaps)


def _within_budget(
    db: Database, settings: Settings, entity: str, own: int, ahead: int, pace: float, now: datetime
) -> tuple[float, str | None]:
    """The seconds left once the daily budget is counted: the episodes that fit in what is
    left of today's run today; the rest wait for the next UTC days, as many a day as the
    whole budget holds."""
    seconds = (own + ahead) * pace
    limits = [
        (limit, used, unit)
        for limit, used, unit in (
            (settings.graph_daily_calls, "calls", "calls"),
            (settings.graph_daily_tokens, "tokens", "tokens"),
        )
        if limit
    ]
    if not limits:
        return seconds, None
    spent = budget.usage_today(db, entity)
    today = now.strftime("%Y-%m-%d")
    finished = queue.finished_since(db, JOB_KIND, entity, today)
    if not finished:
        return seconds, "the daily budget limits it; no episode of today says what one costs"
    fit_today, per_day, said = own, own, []
    for limit, key, unit in limits:
        cost = spent[key] / finished
        if cost <= 0:
            continue
        fit_today = min(fit_today, max(0, math.floor((limit - spent[key]) / cost)))
        per_day = min(per_day, max(1, math.floor(limit / cost)))
        said.append(f"{cost:,.0f} {unit} an episode")
    if fit_today >= own:
        return seconds, None
    left = own - fit_today
    days = math.ceil(left / per_day)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), UTC)
    last_day = left - (days - 1) * per_day
    seconds = (midnight - now).total_seconds() + (days - 1) * 86400 + last_day * pace
    return seconds, (
        f"the daily budget fits {fit_today} more of its {own} episodes today"
        f" ({', '.join(said)}); the rest wait for the next UTC day"
        + (f"s ({per_day} a day)" if days > 1 else "")
    )
