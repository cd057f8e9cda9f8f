"""summarize_messages: compress the oldest unsummarized turns into a layer 4 summary.

With an LLM configured (the one graph extraction uses) the summary is written and stored
here; without one, the turns come back for the agent to summarize and store itself. The
batch and its id range are fixed before the LLM is asked, so turns stored while it thinks
stay unsummarized, and a failed or useless answer stores nothing.

With an LLM, it also runs by itself: every `summarize_check_s` the entities whose
unsummarized turns are past `summarize_after` get a `summarize` job in the queue (one
worker: never two over the same turns), which summarizes the oldest batch and queues the
next while the count stays past the threshold. A job's key is the day and the batch's
first turn, so a job that could not be done (the LLM's budget spent, retries used up) is
asked again the next day, not in a loop.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, ValidationError

from engine.capture import entities
from engine.capture.events import Event
from engine.crystal import summaries
from engine.crystal.summaries import SUMMARY_TYPE_PATTERN, Batch, Summary, SummaryIn
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.kernel.errors import BadUpstream, Unavailable
from engine.kernel.requests import Request
from engine.llm import budget
from engine.store import queue
from engine.store.db import Database
from engine.store.ticker import Ticker

JOB_KIND = "summarize"
AUTO_BATCH = 50  # turns a summary written by itself covers (summarize_messages' default)

# The prompt is data: tune it here without touching the control flow below.
SYSTEM = (
    "You compress conversation history into long-term memory for an AI entity. Write one "
    "summary of the turns you are given, in plain prose, past tense. Keep who said what, "
    "decisions and promises made, feelings expressed, and every name, place and date that "
    "appears. Leave out greetings and filler. Do not invent anything that is not in the turns."
)
PROMPT = (
    "Summarize these {count} turns ({first} to {last}). Each line is [time, channel] "
    "speaker: text.\n<TURNS>\n{turns}\n</TURNS>"
)


class SummarizeRequest(Request):
    limit: int = Field(50, ge=1, le=1000, description="How many of the oldest turns to compress.")
    summary_type: str = Field("message", pattern=SUMMARY_TYPE_PATTERN)


class MessageSummary(BaseModel):
    """The answer asked of the LLM (its JSON schema is the structured-output format)."""

    summary: str = Field(
        description="The summary: who said what, decisions, feelings, names and dates."
    )


class Summarized(BaseModel):
    summarized: bool = Field(description="True: stored here; false: see `message`.")
    message: str
    summary_type: str
    start_id: int | None
    end_id: int | None
    count: int = Field(description="Turns summarized (or to summarize).")
    summary: Summary | None = Field(None, description="What was stored, when summarized.")
    turns: list[Event] = Field(
        description="Without an LLM: the turns to summarize; empty when summarized here."
    )
    unsummarized: int = Field(description="Turns still unsummarized after this call.")


class Failed(BadUpstream):
    """The LLM answered, but with nothing usable (an error status, text that is not the
    JSON asked for, an empty summary): no summary was stored. When no answer came at all
    (timeout, rate limit, budget spent) the error is Unavailable("llm", ...) instead."""

    def __init__(self, reason: str):
        super().__init__("llm", f"{reason}; nothing was stored")


def summarize(
    db: Database, settings: Settings, entity: str, request: SummarizeRequest
) -> Summarized:
    batch = summaries.next_batch(db, entity, request.limit)
    if not batch.turns:
        return _answer(batch, request, "Nothing to summarize.")
    if settings.llm_provider == "none":
        message = (
            "No summarizing LLM is configured: summarize these turns and call store_summary"
            f" with start_id={batch.start_id} and end_id={batch.end_id}"
        )
        return _answer(batch, request, message)
    text = _write(db, settings, entity, batch)
    try:
        summary_in = SummaryIn(
            summary_text=text,
            start_id=batch.start_id,
            end_id=batch.end_id,
            channels=batch.channels,
            summary_type=request.summary_type,
        )
    except ValidationError as exc:
        raise Failed(f"the LLM's summary cannot be stored: {exc}"[:300]) from exc
    summary = summaries.store(db, entity, summary_in, written_from=[t.id for t in batch.turns])
    left = summaries.unsummarized_count(db, entity)
    return Summarized(
        summarized=True,
        message=f"Summarized {len(batch.turns)} turns (ids {batch.start_id}..{batch.end_id})"
        f" into summary {summary.id}; {left} turns are still unsummarized.",
        summary_type=summary.summary_type,
        start_id=batch.start_id,
        end_id=batch.end_id,
        count=len(batch.turns),
        summary=summary,
        turns=[],
        unsummarized=left,
    )


def _write(db: Database, settings: Settings, entity: str, batch: Batch) -> str:
    """Ask the LLM for the summary text, within the entity's daily LLM budget (the one
    graph extraction spends from), and count what it cost."""
    spent = budget.budget_spent(db, settings, entity)
    if spent:
        raise Unavailable(
            "llm", f"{budget.BUDGET_SPENT} ({spent}); resumes after 00:00 UTC; nothing was stored"
        )
    from engine.llm import client as llm  # the SDKs, loaded by what talks to the LLM

    usage = budget.Usage()
    prompt = PROMPT.format(
        count=len(batch.turns),
        first=batch.turns[0].created_at,
        last=batch.turns[-1].created_at,
        turns="\n".join(_line(turn) for turn in batch.turns),
    )
    try:
        reply = llm.ask(settings, SYSTEM, prompt, MessageSummary, usage)
    except llm.Failed as exc:
        if exc.unavailable:
            raise Unavailable("llm", f"{exc}; nothing was stored") from exc
        raise Failed(str(exc)) from exc
    finally:
        budget.spend(db, entity, usage)
    text = reply.summary.strip()
    if not text:
        raise Failed("the LLM answered with an empty summary")
    return text


def _line(turn: Event) -> str:
    when = turn.created_at[:16].replace("T", " ")
    return f"[{when}, {turn.channel}] {turn.author or turn.role or '?'}: {turn.content}"


def _answer(batch: Batch, request: SummarizeRequest, message: str) -> Summarized:
    """Nothing stored: the turns (if any) for the agent to summarize with store_summary."""
    return Summarized(
        summarized=False,
        message=message,
        summary_type=request.summary_type,
        start_id=batch.start_id,
        end_id=batch.end_id,
        count=len(batch.turns),
        turns=batch.turns,
        unsummarized=batch.unsummarized,
    )


# --- by itself -------------------------------------------------------------------------


def sweep(db: Database, settings: Settings) -> int:
    """Queue a summary job for each entity past the threshold; returns how many."""
    if settings.llm_provider == "none" or not settings.summarize_after:
        return 0
    queued = 0
    for entity in entities.list_all(db):
        if summaries.unsummarized_count(db, entity.name) > settings.summarize_after:
            queued += _enqueue_next(db, entity.name)
    return queued


def status(db: Database, settings: Settings) -> dict:
    """For /health and `pps doctor` (no entity names): how many entities are past the
    threshold, and whether summaries come by themselves. It degrades nothing."""
    above = settings.summarize_after or summaries.WARN_ABOVE
    past = sum(
        summaries.unsummarized_count(db, entity.name) > above for entity in entities.list_all(db)
    )
    by_itself = bool(settings.summarize_after) and settings.llm_provider != "none"
    state = {"status": "ok", "threshold": above, "entities_past": past, "by_itself": by_itself}
    if past and not by_itself:
        state["why"] = "no LLM: each entity's agent runs summarize_messages (recall says so)"
    return state


def sweeper(db: Database, settings: Settings) -> Ticker:
    return Ticker("summarize-sweeper", settings.summarize_check_s, lambda: sweep(db, settings))


def handler(db: Database, settings: Settings):
    """The summarize job: the oldest batch of the entity's unsummarized turns, then the
    next job while the count stays past the threshold. A spent budget ends the job
    (tomorrow's sweep asks again); an LLM that fails is retried by the queue."""

    def summarize_job(job: queue.Job) -> None:
        if budget.budget_spent(db, settings, job.entity):
            return
        done = summarize(db, settings, job.entity, SummarizeRequest(limit=AUTO_BATCH))
        if done.summarized and done.unsummarized > settings.summarize_after:
            _enqueue_next(db, job.entity)

    return summarize_job


def _enqueue_next(db: Database, entity: str) -> int:
    first = summaries.next_batch(db, entity, 1).start_id
    if first is None:
        return 0
    with db.write() as conn:
        queue.enqueue(conn, entity, JOB_KIND, f"{timestamps.now()[:10]}:from-{first}", {})
    return 1
