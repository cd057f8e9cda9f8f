"""Layer 4 summaries over REST, and the turns they have not covered yet."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from engine.capture.events import CHANNEL_PATTERN
from engine.crystal import summaries, summarize
from engine.crystal.summaries import (
    Summary,
    SummaryHit,
    SummaryIn,
    SummaryStats,
    TurnsSince,
    TurnsSinceSummary,
)
from pps.rest.deps import DB, AppSettings, CurrentEntity

router = APIRouter(prefix="/v1", tags=["summaries"])


class Summaries(BaseModel):
    summaries: list[Summary]


class SummaryHits(BaseModel):
    results: list[SummaryHit]


@router.post("/summaries", summary="Store a summary of an event range (marks it summarized)")
def store_summary(body: SummaryIn, entity: CurrentEntity, db: DB) -> Summary:
    return summaries.store(db, entity, body)


@router.post(
    "/summaries/summarize",
    summary="Summarize the oldest unsummarized turns with the configured LLM",
    responses={
        502: {"description": "The LLM answered, unusably: nothing stored"},
        503: {"description": "No answer from the LLM (or its daily budget is spent)"},
    },
)
def summarize_messages(
    body: summarize.SummarizeRequest, entity: CurrentEntity, db: DB, settings: AppSettings
) -> summarize.Summarized:
    """Without an LLM the turns come back (`summarized: false`) to summarize and store
    with POST /v1/summaries. No answer from the LLM is a 503, an unusable one a 502."""
    return summarize.summarize(db, settings, entity, body)


@router.get("/summaries", summary="The newest summaries, oldest of them first")
def recent_summaries(
    entity: CurrentEntity, db: DB, limit: Annotated[int, Query(ge=1, le=100)] = 5
) -> Summaries:
    return Summaries(summaries=summaries.recent(db, entity, limit))


@router.get("/summaries/search", summary="Full-text search over summaries")
def search_summaries(
    entity: CurrentEntity,
    db: DB,
    query: Annotated[str, Query(min_length=1, max_length=4096)],
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> SummaryHits:
    return SummaryHits(results=summaries.search(db, entity, query, limit))


@router.get("/summaries/stats", summary="Counts, and how many turns are unsummarized")
def summary_stats(entity: CurrentEntity, db: DB) -> SummaryStats:
    return summaries.stats(db, entity)


@router.get("/turns/since-summary", summary="Turns no summary covers yet, paged")
def turns_since_summary(
    entity: CurrentEntity,
    db: DB,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
    channel: Annotated[str | None, Query(pattern=CHANNEL_PATTERN)] = None,
    oldest_first: bool = True,
) -> TurnsSinceSummary:
    return summaries.turns_since_summary(db, entity, limit, offset, channel, oldest_first)


@router.get("/turns/since", summary="Turns since a moment, with the summaries made since")
def turns_since(
    entity: CurrentEntity,
    db: DB,
    timestamp: Annotated[str, Query(min_length=1)],
    include_summaries: bool = True,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> TurnsSince:
    return summaries.turns_since(db, entity, timestamp, include_summaries, limit)
