"""Layer 4 summaries over REST, and the turns they have not covered yet."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engine.crystal import summaries, summarize
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
from pps.http.deps import DB, AppSettings, CurrentEntity
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1", tags=["summaries"])


@router.post(
    "/summaries",
    summary="Store a summary of an event range (marks it summarized)",
    responses=problems(404, 409),
)
def store_summary(body: SummaryIn, entity: CurrentEntity, db: DB) -> Summary:
    return summaries.store(db, entity, body)


@router.post(
    "/summaries/summarize",
    summary="Summarize the oldest unsummarized turns with the configured LLM",
    responses=problems(502, 503),
)
def summarize_messages(
    body: summarize.SummarizeRequest, entity: CurrentEntity, db: DB, settings: AppSettings
) -> summarize.Summarized:
    """Without an LLM the turns come back (`summarized: false`) to summarize and store
    with POST /v1/summaries. No answer from the LLM is a 503, an unusable one a 502."""
    return summarize.summarize(db, settings, entity, body)


@router.get("/summaries", summary="The newest summaries, oldest of them first")
def recent_summaries(
    query: Annotated[RecentQuery, Query()], entity: CurrentEntity, db: DB
) -> Summaries:
    return summaries.recent(db, entity, query)


@router.get("/summaries/search", summary="Full-text search over summaries")
def search_summaries(
    query: Annotated[SummarySearch, Query()], entity: CurrentEntity, db: DB
) -> SummaryHits:
    return summaries.search(db, entity, query)


@router.get("/summaries/stats", summary="Counts, and how many turns are unsummarized")
def summary_stats(entity: CurrentEntity, db: DB, settings: AppSettings) -> SummaryStats:
    return summaries.stats(db, settings, entity)


@router.get("/turns/since-summary", summary="Turns no summary covers yet, paged")
def turns_since_summary(
    query: Annotated[SinceSummaryQuery, Query()],
    entity: CurrentEntity,
    db: DB,
    settings: AppSettings,
) -> TurnsSinceSummary:
    return summaries.turns_since_summary(db, settings, entity, query)


@router.get("/turns/since", summary="Turns since a moment, with the summaries made since")
def turns_since(query: Annotated[SinceQuery, Query()], entity: CurrentEntity, db: DB) -> TurnsSince:
    return summaries.turns_since(db, entity, query)
