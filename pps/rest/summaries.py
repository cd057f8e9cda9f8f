"""Layer 4 summaries over REST, and the turns they have not covered yet."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engine.crystal.summaries import (
    RecentQuery,
    SinceQuery,
    SinceSummaryQuery,
    Summaries,
    Summary,
    SummaryHits,
    SummaryIn,
    SummarySearch,
    SummaryStats,
    TurnsSince,
    TurnsSinceSummary,
)
from engine.crystal.summarize import Summarized, SummarizeRequest
from pps.http.deps import CurrentMemory
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1", tags=["summaries"])


@router.post(
    "/summaries",
    summary="Store a summary of an event range (marks it summarized)",
    responses=problems(404, 409),
)
def store_summary(body: SummaryIn, memory: CurrentMemory) -> Summary:
    return memory.summaries.store(body)


@router.post(
    "/summaries/summarize",
    summary="Summarize the oldest unsummarized turns with the configured LLM",
    responses=problems(502, 503),
)
def summarize_messages(body: SummarizeRequest, memory: CurrentMemory) -> Summarized:
    """Without an LLM the turns come back (`summarized: false`) to summarize and store
    with POST /v1/summaries. No answer from the LLM is a 503, an unusable one a 502."""
    return memory.summaries.summarize(body)


@router.get("/summaries", summary="The newest summaries, oldest of them first")
def recent_summaries(query: Annotated[RecentQuery, Query()], memory: CurrentMemory) -> Summaries:
    return memory.summaries.recent(query)


@router.get("/summaries/search", summary="Full-text search over summaries")
def search_summaries(
    query: Annotated[SummarySearch, Query()], memory: CurrentMemory
) -> SummaryHits:
    return memory.summaries.search(query)


@router.get("/summaries/stats", summary="Counts, and how many turns are unsummarized")
def summary_stats(memory: CurrentMemory) -> SummaryStats:
    return memory.summaries.stats()


@router.get("/turns/since-summary", summary="Turns no summary covers yet, paged")
def turns_since_summary(
    query: Annotated[SinceSummaryQuery, Query()], memory: CurrentMemory
) -> TurnsSinceSummary:
    return memory.summaries.turns_since_summary(query)


@router.get("/turns/since", summary="Turns since a moment, with the summaries made since")
def turns_since(query: Annotated[SinceQuery, Query()], memory: CurrentMemory) -> TurnsSince:
    return memory.summaries.turns_since(query)
