"""The pages of the web face and the JSON they poll: each parses, calls the front door
(the signed-in entity's memory) as REST does for the same thing (the same request
models), and renders.

Pages answer a refusal with an HTML page (not signed in: a redirect to the sign-in
page); the JSON endpoints under /ui/api answer in the service's one error shape.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from pydantic import ValidationError

from engine.api import Memory
from engine.api.recall import Audit
from engine.capture.events import EventQuery, Page, SearchQuery
from engine.kernel.errors import InputError, NotFound, from_validation
from engine.recall.audit import DrawQuery, JudgmentIn, JudgmentRef, Precision, PrecisionQuery
from engine.recall.log import LogQuery
from engine.recall.shapes import RecallRequest
from engine.search.hybrid import SearchRequest
from pps.http.deps import AppService, AppSettings
from pps.web import guard
from pps.web.guard import LOGIN_COOKIE, SessionMemory, Write
from pps.web.render import HERE, blank, page_router, render

log = logging.getLogger("pps.web")

STATIC = {path.name: path for path in (HERE / "static").iterdir() if path.is_file()}
PAGE_SIZE = 50
AUDIT_PAGE = 10

pages = page_router()
icon = APIRouter(include_in_schema=False)
api = APIRouter(
    prefix="/ui/api", include_in_schema=False, dependencies=[Depends(guard.same_origin)]
)


# --- signing in and out ---


@pages.get("")
def sign_in_page(request: Request) -> Response:
    if guard.current(request) is not None:
        return guard.harden(RedirectResponse("/ui/timeline", status_code=303))
    return _sign_in_form(request)


def _sign_in_form(request: Request, status: int = 200, problem: str | None = None) -> Response:
    form_token = guard.new_form_token()
    response = render(
        request, "sign_in.html", http_status=status, form_csrf=form_token, problem=problem
    )
    response.set_cookie(
        LOGIN_COOKIE, form_token, path="/ui", httponly=True, samesite="strict", max_age=3600
    )
    return response


@pages.post("/login")
def sign_in(
    request: Request,
    service: AppService,
    token: Annotated[str, Form(max_length=512)] = "",
    csrf: Annotated[str, Form(max_length=512)] = "",
) -> Response:
    guard.check_csrf(request.cookies.get(LOGIN_COOKIE, ""), csrf)
    throttle, client = guard.sign_ins(request), guard.client_address(request)
    wait = throttle.wait_s(client)
    if wait:
        problem = f"Too many wrong tokens from this address: try again in {wait} s."
        response = _sign_in_form(request, 429, problem)
        response.headers["Retry-After"] = str(wait)
        return response
    holder = service.entities.holder(token.strip()) if token.strip() else None
    if holder is None:
        failures, delay = throttle.failed(client)
        log.warning(
            "a sign-in to the web face from %s was refused (%d wrong in a row); its next"
            " is looked at in %d s",
            client,
            failures,
            delay,
        )
        return _sign_in_form(request, 401, "Unknown or revoked token.")
    throttle.succeeded(client)
    session = guard.sessions(request).start(holder.entity, holder.issued)
    log.info("%s signed in to the web face", holder.entity)
    response = guard.harden(RedirectResponse("/ui/timeline", status_code=303))
    guard.set_session_cookie(response, session)
    response.delete_cookie(LOGIN_COOKIE, path="/ui", httponly=True, samesite="strict")
    return response


@pages.post("/logout")
def sign_out(request: Request, session: Write) -> Response:
    guard.sessions(request).end(session.id)
    response = guard.harden(RedirectResponse("/ui", status_code=303))
    guard.clear_session_cookie(response)
    return response


@icon.get("/favicon.ico")
def favicon() -> Response:
    """The Observatory's icon, where browsers ask for it first (an SVG: every current
    browser draws one)."""
    response = FileResponse(STATIC["favicon.svg"], media_type="image/svg+xml")
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


@pages.get("/static/{name}")
def static(name: str) -> Response:
    path = STATIC.get(name)
    if path is None:
        raise NotFound(f"no file {name}")
    response = FileResponse(path, headers={"Cache-Control": "no-cache"})
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


# --- timeline ---


@pages.get("/timeline")
def timeline(
    request: Request,
    memory: SessionMemory,
    channel: str | None = None,
    session_id: str | None = None,
    event_type: str | None = None,
    q: str | None = None,
    mode: str = "keyword",
    cursor: str | None = None,
) -> Response:
    filters = {
        "channel": blank(channel),
        "session_id": blank(session_id),
        "event_type": blank(event_type),
    }
    q = blank(q)
    if mode not in ("keyword", "hybrid"):
        raise InputError.of("mode", "keyword or hybrid")
    page: Page | None = None
    hits: list[dict] | None = None
    fallback = None
    if q is None:
        page = memory.events.list(EventQuery(**filters, limit=PAGE_SIZE, cursor=blank(cursor)))
    elif mode == "keyword":
        found = memory.events.search(SearchQuery(**filters, q=q, limit=PAGE_SIZE))
        hits = [{"event": hit.event, "snippet": hit.snippet, "score": hit.score} for hit in found]
    else:
        ask = SearchRequest(query=q, tiers="longform", channel=filters["channel"], limit=PAGE_SIZE)
        answer = memory.search(ask)
        fallback = answer.fallback
        hits = [{"result": result, "score": result.score} for result in answer.results]
    return render(
        request,
        "timeline.html",
        active="timeline",
        filters=filters,
        given={name: value for name, value in filters.items() if value},
        q=q or "",
        mode=mode,
        page=page,
        hits=hits,
        fallback=fallback,
        channels=memory.events.channels(),
        sessions=memory.events.sessions(filters["channel"]),
    )


@pages.get("/around")
def around(
    request: Request,
    memory: SessionMemory,
    event: int | None = None,
    uid: str | None = None,
    everywhere: bool = False,
    count: int = 20,
) -> Response:
    """The turns around one event: in its channel, or in every channel."""
    if event is None and not uid:
        raise InputError.of("event", "name an event: ?event=<id> or ?uid=<event_uid>")
    if not 1 <= count <= 500:
        raise InputError.of("count", "from 1 to 500")
    found = memory.events.get(event_id=event, event_uid=uid)
    channel = None if everywhere else found.channel
    turns = memory.events.around_event(found, count, channel)
    return render(
        request,
        "around.html",
        active="timeline",
        event=found,
        turns=turns,
        everywhere=everywhere,
    )


@api.get("/events")
def newest_events(
    memory: SessionMemory,
    channel: str | None = None,
    session_id: str | None = None,
    event_type: str | None = None,
) -> Page:
    """The newest events under the timeline's filters: what the page polls for."""
    filters = {
        "channel": blank(channel),
        "session_id": blank(session_id),
        "event_type": blank(event_type),
    }
    try:
        query = EventQuery(**filters, limit=PAGE_SIZE)
    except ValidationError as exc:
        raise from_validation(exc.errors()) from None
    return memory.events.list(query)


# --- recall ---


def _recall_log(memory: Memory, channel: str | None, contains: str | None):
    return memory.recall_log(
        LogQuery(limit=50, channel=blank(channel), contains=blank(contains))
    ).entries


@pages.get("/recall")
def recall_page(
    request: Request,
    memory: SessionMemory,
    settings: AppSettings,
    log: int | None = None,
    channel: str | None = None,
    contains: str | None = None,
) -> Response:
    entry = None
    if log is not None:
        picked = memory.recall_log(LogQuery(id=log, limit=1)).entries
        if not picked:
            raise NotFound(f"no logged recall {log}")
        entry = picked[0]
    return render(
        request,
        "recall.html",
        active="recall",
        settings=settings,
        entry=entry,
        answer=None,
        ask=None,
        entries=_recall_log(memory, channel, contains),
        log_filter={"channel": channel or "", "contains": contains or ""},
        used=memory.used_share(),
    )


@pages.post("/recall")
def run_recall(
    request: Request,
    session: Write,
    memory: SessionMemory,
    settings: AppSettings,
    context: Annotated[str, Form()] = "",
    channel: Annotated[str, Form()] = "",
    limit_per_layer: Annotated[int, Form()] = 5,
    max_tokens: Annotated[int, Form()] = 2000,
) -> Response:
    ask = RecallRequest(
        context=context,
        channel=blank(channel),
        limit_per_layer=limit_per_layer,
        max_tokens=max_tokens,
        trace=True,
    )
    answer = memory.recall(ask)
    return render(
        request,
        "recall.html",
        active="recall",
        settings=settings,
        entry=None,
        answer=answer,
        ask=ask,
        entries=_recall_log(memory, None, None),
        log_filter={"channel": "", "contains": ""},
        used=memory.used_share(),
    )


# --- queue and health ---


@pages.get("/queue")
def queue_page(
    request: Request,
    memory: SessionMemory,
    service: AppService,
    settings: AppSettings,
    retried_job: int | None = None,
    retried: int | None = None,
) -> Response:
    used = memory.llm_usage_today()
    return render(
        request,
        "queue.html",
        active="queue",
        status=memory.queue(),
        health=service.health(),
        used=used,
        limits={"calls": settings.graph_daily_calls, "tokens": settings.graph_daily_tokens},
        spent=memory.llm_budget_spent(),
        waiting=memory.graph.waiting(),
        retried=f"job {retried_job}"
        if retried_job is not None
        else (None if retried is None else f"{retried} jobs"),
    )


@pages.post("/queue/retry")
def retry(
    session: Write,
    memory: SessionMemory,
    job: Annotated[str, Form()] = "",
) -> Response:
    """One dead (or waiting, or retrying) job back to pending; with no `job`, all of them."""
    if job.strip():
        if not job.strip().isdigit():
            raise InputError.of("job", "a job id, a whole number")
        memory.retry_job(int(job))
        note = f"retried_job={int(job)}"
    else:
        note = f"retried={memory.retry(dead=True)}"
    return guard.harden(RedirectResponse(f"/ui/queue?{note}", status_code=303))


# --- audit ---


@pages.get("/audit")
def audit_page(
    request: Request,
    memory: SessionMemory,
    settings: AppSettings,
    seed: int | None = None,
    n: int = Audit.DRAW_DEFAULT,
    k: int = 5,
    unjudged: bool = False,
    page: int = 1,
) -> Response:
    """N logged recalls drawn at random, each item to judge; precision@k beside them. The
    seed is in the URL, so a reload shows the same draw (without one, a new draw); the
    draw is shown AUDIT_PAGE recalls at a time (`page=`)."""
    ask = DrawQuery(n=n, seed=seed, unjudged=unjudged)
    precision = memory.audit.precision(PrecisionQuery(k=k))
    if seed is None:
        seed = memory.audit.new_seed()
        query = urlencode({"seed": seed, "n": n, "k": k, **({"unjudged": 1} if unjudged else {})})
        return guard.harden(RedirectResponse(f"/ui/audit?{query}", status_code=303))
    drawn = memory.audit.draw(ask)
    pages_drawn = max(1, -(-len(drawn.recalls) // AUDIT_PAGE))
    if not 1 <= page <= pages_drawn:
        raise InputError.of("page", f"from 1 to {pages_drawn}")
    return render(
        request,
        "audit.html",
        active="audit",
        settings=settings,
        drawn=drawn,
        shown=drawn.recalls[(page - 1) * AUDIT_PAGE : page * AUDIT_PAGE],
        page=page,
        pages_drawn=pages_drawn,
        per_page=AUDIT_PAGE,
        ask=ask,
        k=k,
        precision=precision,
        used=memory.used_share(),
    )


@pages.post("/audit/judge")
def judge_form(
    session: Write,
    memory: SessionMemory,
    log_id: Annotated[int, Form()],
    rank: Annotated[int, Form()],
    relevant: Annotated[str, Form()],
    seed: Annotated[int, Form()] = 0,
    n: Annotated[int, Form()] = Audit.DRAW_DEFAULT,
    page: Annotated[int, Form()] = 1,
) -> Response:
    """The page's judgment without its script: judge (or, `relevant=undo`, take the
    judgment back), then back to the same draw."""
    if relevant not in ("0", "1", "undo"):
        raise InputError.of("relevant", "1 (relevant), 0 (not) or undo")
    if relevant == "undo":
        memory.audit.unjudge(JudgmentRef(log_id=log_id, rank=rank))
    else:
        ask = JudgmentIn(log_id=log_id, rank=rank, relevant=relevant == "1")
        memory.audit.judge(ask, face="ui")
    back = urlencode({"seed": seed, "n": n, "page": page})
    return guard.harden(RedirectResponse(f"/ui/audit?{back}#r{log_id}-{rank}", status_code=303))


@api.post("/audit/judgments")
def judge(body: JudgmentIn, session: Write, memory: SessionMemory, k: int = 5) -> dict[str, Any]:
    """What the audit page posts for each key press: the judgment, and precision now."""
    judgment = memory.audit.judge(body, face="ui")
    return {"judgment": judgment, "precision": _precision(memory, k)}


@api.post("/audit/undo")
def undo_judgment(
    body: JudgmentRef, session: Write, memory: SessionMemory, k: int = 5
) -> dict[str, Any]:
    """The audit page's undo (the u key): the item unjudged again, and precision now."""
    undone = memory.audit.unjudge(body)
    return {"undone": undone, "precision": _precision(memory, k)}


@api.get("/audit/precision")
def audit_precision(memory: SessionMemory, k: int = 5) -> Precision:
    return _precision(memory, k)


def _precision(memory: Memory, k: int) -> Precision:
    try:
        ask = PrecisionQuery(k=k)
    except ValidationError as exc:
        raise from_validation(exc.errors()) from None
    return memory.audit.precision(ask)
