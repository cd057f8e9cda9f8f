"""Layer 1 over REST: /v1/events, /v1/events/search, /v1/turns/around."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from pydantic import BaseModel

from engine.capture.events import (
    AroundQuery,
    Event,
    EventQuery,
    Page,
    Recorded,
    SearchHit,
    SearchQuery,
)
from engine.kernel.events import EventIn
from pps.http.deps import CurrentMemory

router = APIRouter(prefix="/v1", tags=["events"])


class Stored(BaseModel):
    events: list[Recorded]
    stored: int
    duplicates: int


@router.post("/events", summary="Capture one event or a list (all or nothing)")
def post_events(
    payload: Annotated[
        Any,
        Body(
            description="One event object, or a list of them (all or nothing).",
            examples=[{"channel": "terminal", "author": "jeff", "content": "good morning"}],
        ),
    ],
    memory: CurrentMemory,
) -> Stored:
    recorded = memory.events.record(memory.events.parse(payload))
    new = sum(not r.duplicate for r in recorded)
    return Stored(events=recorded, stored=new, duplicates=len(recorded) - new)


def describe_body(openapi: dict, max_batch: int) -> None:
    """Give POST /v1/events its body's schema in `openapi` (the app's description): one
    EventIn, or a list of 1..max_batch of them. The route takes the body as it comes and
    checks it itself (`memory.events.parse`), to name every event's problems at once."""
    ref = {"$ref": "#/components/schemas/EventIn"}
    openapi["components"]["schemas"]["EventIn"] = EventIn.model_json_schema(
        ref_template="#/components/schemas/{model}"
    )
    body = openapi["paths"]["/v1/events"]["post"]["requestBody"]["content"]["application/json"]
    body["schema"]["oneOf"] = [
        ref,
        {"type": "array", "items": ref, "minItems": 1, "maxItems": max_batch},
    ]


@router.get("/events", summary="Page through events, newest or oldest first")
def list_events(query: Annotated[EventQuery, Query()], memory: CurrentMemory) -> Page:
    return memory.events.list(query)


class SearchResults(BaseModel):
    results: list[SearchHit]


@router.get("/events/search", summary="Full-text search over event content, ranked")
def search_events(query: Annotated[SearchQuery, Query()], memory: CurrentMemory) -> SearchResults:
    return SearchResults(results=memory.events.search(query))


class Turns(BaseModel):
    events: list[Event]


@router.get("/turns/around", summary="The conversation around a moment, oldest first")
def turns_around(query: Annotated[AroundQuery, Query()], memory: CurrentMemory) -> Turns:
    return Turns(events=memory.events.around(query))
