"""The graph page: the entity's facts (valid and invalidated, with their dates), each
linked to the events it came from, drawn with their entities (pps.web.layout); an
entity's neighbourhood; deleting a fact after the person confirms. Over the texture
services REST uses; a graph that is off or down is said on the page, and so is why its
extraction waits (no LLM configured, a key refused, the day's budget spent)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import Form, Request
from fastapi.responses import RedirectResponse, Response

from engine.graph.texture import ExploreQuery, FactsQuery
from engine.kernel.errors import InputError, NotFound
from pps.web import guard, layout
from pps.web.guard import SessionMemory, Write
from pps.web.render import blank, page_router, render

PAGE = 100

router = page_router()


@router.get("/graph")
def graph_page(
    request: Request,
    memory: SessionMemory,
    contains: str | None = None,
    state: str | None = None,
    entity: str | None = None,
    depth: int = 1,
    offset: int = 0,
    deleted: str | None = None,
) -> Response:
    ask = FactsQuery(contains=blank(contains), state=blank(state), limit=PAGE, offset=offset)
    listed = memory.graph.facts(ask)
    around = None
    named = blank(entity)
    if named and listed.status == "ok":
        try:
            around = memory.graph.explore(ExploreQuery(entity_name=named, depth=depth))
        except NotFound:
            around = None
    drawn = around.facts if around is not None and around.status == "ok" else listed.facts
    return render(
        request,
        "graph.html",
        active="graph",
        status=listed.status,
        backend=memory.graph.backend,
        facts=listed.facts,
        ask=ask,
        entity=blank(entity),
        depth=depth,
        around=around,
        drawing=layout.radial(drawn, blank(entity)),
        deleted=deleted if deleted in ("fact", "entity", "episode") else None,
        page=PAGE,
        waiting=memory.graph.waiting(),
    )


@router.post("/graph/delete")
def delete_fact(
    session: Write,
    memory: SessionMemory,
    uuid: Annotated[str, Form(max_length=100)] = "",
    contains: Annotated[str, Form(max_length=200)] = "",
    entity: Annotated[str, Form(max_length=256)] = "",
) -> Response:
    """Delete one fact (the page asks first), as DELETE /v1/texture/{uuid} does; then
    back to the page as it was filtered."""
    if not uuid.strip():
        raise InputError.of("uuid", "name the fact")
    deleted = memory.graph.delete(uuid.strip())
    query = {"deleted": deleted.deleted}
    query |= {k: v for k, v in (("contains", contains), ("entity", entity)) if v.strip()}
    return guard.harden(RedirectResponse(f"/ui/graph?{urlencode(query)}", status_code=303))
