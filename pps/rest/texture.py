"""Layer 3, rich texture, over REST: /v1/texture/*."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from engine.graph import curator, texture
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
from pps.http.deps import DB, AppRuntime, AppSettings, CurrentEntity
from pps.rest.statuses import problems

router = APIRouter(prefix="/v1/texture", tags=["texture"])


def _graph(request: Request):
    """The running graph, or None when GRAPH_BACKEND=none."""
    return request.app.state.runtime.graph


Graph = Annotated[object, Depends(_graph)]


@router.post("/search", summary="Facts relevant to a query, each traced to its events")
def search(body: SearchQuery, entity: CurrentEntity, db: DB, graph: Graph) -> SearchResult:
    return texture.search(graph, db, entity, body)


@router.get("/facts", summary="The entity's facts, valid and invalidated, newest first")
def list_facts(
    query: Annotated[FactsQuery, Query()], entity: CurrentEntity, db: DB, graph: Graph
) -> Facts:
    return texture.facts(graph, db, entity, query)


@router.get(
    "/explore",
    summary="An entity and the facts around it, up to `depth` hops",
    responses=problems(404),
)
def explore(
    query: Annotated[ExploreQuery, Query()], entity: CurrentEntity, db: DB, graph: Graph
) -> Exploration:
    return texture.explore(graph, db, entity, query)


@router.get("/timeline", summary="Episodes newest first, with the facts each one gave")
def timeline(
    query: Annotated[TimelineQuery, Query()], entity: CurrentEntity, db: DB, graph: Graph
) -> Timeline:
    return texture.timeline(graph, db, entity, query)


@router.post("", status_code=202, summary="Learn from a note (stored, then queued)")
def add(body: NoteIn, entity: CurrentEntity, db: DB, runtime: AppRuntime) -> Accepted:
    return texture.add(runtime.capture, entity, body)


@router.post("/triplets", status_code=202, summary="Add a fact between two entities (queued)")
def add_triplet(body: TripletIn, entity: CurrentEntity, db: DB, runtime: AppRuntime) -> Accepted:
    return texture.add_triplet(runtime.capture, entity, body)


@router.delete("/{uuid}", summary="Delete a fact, an entity or an episode from the graph")
def delete(uuid: str, entity: CurrentEntity, db: DB, graph: Graph) -> Deleted:
    return texture.delete(graph, db, entity, uuid)


@router.get("/stats", summary="Ingestion: episodes, jobs, graph counts, today's LLM usage")
def stats(entity: CurrentEntity, db: DB, settings: AppSettings, graph: Graph) -> Stats:
    return texture.stats(graph, db, settings, entity)


@router.get(
    "/duplicates",
    summary="Entity nodes that are the same thing (read-only report)",
    responses=problems(404, 503),
)
def duplicates(entity: CurrentEntity, settings: AppSettings, graph: Graph) -> Duplicates:
    return curator.duplicates(graph, settings, entity)


@router.post(
    "/duplicates/merge",
    summary="Merge the duplicate entity nodes (a dry run unless dry_run is false)",
    responses=problems(404, 503),
)
def merge_duplicates(
    body: MergeRequest, entity: CurrentEntity, settings: AppSettings, graph: Graph
) -> Merged:
    return curator.merge_duplicates(graph, settings, entity, dry_run=body.dry_run)
