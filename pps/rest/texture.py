"""Layer 3, rich texture, over REST: /v1/texture/*."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engine.graph.curator import Duplicates, Merged, MergeRequest
from engine.graph.texture import (
    Accepted,
    Deleted,
    Exploration,
    ExploreQuery,
    Facts,
    FactsQuery,
    NoteIn,
    SearchQuery,
    SearchResult,
    Stats,
    Timeline,
    TimelineQuery,
    TripletIn,
)
from pps.http.deps import CurrentMemory
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/texture", tags=["texture"])


@router.post("/search", summary="Facts relevant to a query, each traced to its events")
def search(body: SearchQuery, memory: CurrentMemory) -> SearchResult:
    return memory.graph.search(body)


@router.get("/facts", summary="The entity's facts, valid and invalidated, newest first")
def list_facts(query: Annotated[FactsQuery, Query()], memory: CurrentMemory) -> Facts:
    return memory.graph.facts(query)


@router.get(
    "/explore",
    summary="An entity and the facts around it, up to `depth` hops",
    responses=problems(404),
)
def explore(query: Annotated[ExploreQuery, Query()], memory: CurrentMemory) -> Exploration:
    return memory.graph.explore(query)


@router.get("/timeline", summary="Episodes newest first, with the facts each one gave")
def timeline(query: Annotated[TimelineQuery, Query()], memory: CurrentMemory) -> Timeline:
    return memory.graph.timeline(query)


@router.post("", status_code=202, summary="Learn from a note (stored, then queued)")
def add(body: NoteIn, memory: CurrentMemory) -> Accepted:
    return memory.graph.add(body)


@router.post("/triplets", status_code=202, summary="Add a fact between two entities (queued)")
def add_triplet(body: TripletIn, memory: CurrentMemory) -> Accepted:
    return memory.graph.add_triplet(body)


@router.delete("/{uuid}", summary="Delete a fact, an entity or an episode from the graph")
def delete(uuid: str, memory: CurrentMemory) -> Deleted:
    return memory.graph.delete(uuid)


@router.get("/stats", summary="Ingestion: episodes, jobs, graph counts, today's LLM usage")
def stats(memory: CurrentMemory) -> Stats:
    return memory.graph.stats()


@router.get(
    "/duplicates",
    summary="Entity nodes that are the same thing (read-only report)",
    responses=problems(404, 503),
)
def duplicates(memory: CurrentMemory) -> Duplicates:
    return memory.graph.duplicates()


@router.post(
    "/duplicates/merge",
    summary="Merge the duplicate entity nodes (a dry run unless dry_run is false)",
    responses=problems(404, 503),
)
def merge_duplicates(body: MergeRequest, memory: CurrentMemory) -> Merged:
    return memory.graph.merge_duplicates(dry_run=body.dry_run)
