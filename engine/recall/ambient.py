"""ambient_recall: every layer in one call, fused, trimmed to a token budget.

`startup` gathers what a clean context needs to wake up as itself: the newest crystals,
recent summaries, recent word-photos, the current space, and the unsummarized turns (the
newest STARTUP_TURN_CAP of them).

Any other context fans out in parallel, each layer under its own time budget: word-
photos, fragments and memory files; raw turns; graph facts; summaries; recent turns
from the other channels (a quota per channel, so one busy channel cannot crowd out the
rest); and inventory items or spaces the context names. A layer that fails or runs out
of time is reported in the manifest and skipped; recall always answers.

Fusion across layers uses ranks, not each layer's raw score (a BM25 number and a graph
RRF position mean nothing to each other): an item's fused score is its layer's weight
over (RANK_K + its rank in the layer), scaled to [0, 1], times how strongly its own layer
rated it relative to that layer's best. Items are deduplicated by their text and taken
best first until `max_tokens` (4 characters a token) is reached.

What the caller says about itself shapes the answer: `answering` names the event(s) the
recall is for (a prompt, whose own event may be stored before its recall runs), which no
layer returns; `channel` and `session_id` are where the caller is, so news from other
channels is neither. Markers (engine.capture.markers) are never turns here. `max_chars`
caps the formatted block (a hook's injection): items are kept in priority order (startup:
crystals, the current space, the newest summary, the newest unsummarized turns,
word-photos, older summaries; otherwise the fused order) and the block says what was
left out and which tool brings it back.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, Field

from engine.capture.events import Event
from engine.capture.markers import is_marker
from engine.crystal import crystals, summaries
from engine.graph import texture
from engine.graph.backend import Graph
from engine.inventory import items as inventory
from engine.kernel import limits, timestamps
from engine.kernel.config import Settings
from engine.kernel.errors import InputError
from engine.kernel.patterns import CHANNEL_PATTERN, EVENT_UID_PATTERN
from engine.kernel.requests import INT64_MAX, Request
from engine.search import anchors, chunks, embeddings
from engine.search import hybrid as search
from engine.search.index import Index
from engine.store.db import Database


class Layers(Protocol):
    """What recall reads: the running server's engine.runtime.Runtime is one."""

    settings: Settings
    db: Database
    index: Index
    graph: Graph | None


RANK_K = 10
CHARS_PER_TOKEN = 4
STARTUP_TURN_CAP = 200
RECENT_WINDOW = 200  # the latest events looked at for news from other channels
QUERY_CHARS = 4096  # what search and the graph take as a query (the model reads less)
WEIGHTS = {  # how much a layer's best item counts against another layer's best
    "anchors": 1.0,
    "graph": 0.9,
    "summaries": 0.8,
    "turns": 1.0,  # 0.8 put a theme's word-photo above the turn that answers (companion set)
    "inventory": 1.0,
    "recent": 0.5,
}
TITLES = {
    "crystals": "Crystals (who you have been lately)",
    "summaries": "Summaries (compressed history)",
    "anchors": "Word-photos, notes and memory files",
    "graph": "Facts (knowledge graph)",
    "turns": "Past turns",
    "recent": "Meanwhile in other channels",
    "inventory": "Inventory and spaces",
    "space": "Where you are",
    "unsummarized": "Turns since the last summary",
}
LEFT_OUT = {  # what a layer's items are called when some are not shown
    "crystals": "older crystals",
    "summaries": "summaries",
    "anchors": "word-photos",
    "space": "spaces",
    "graph": "facts",
    "turns": "past turns",
    "recent": "turns from other channels",
    "inventory": "inventory items",
}
STARTUP_TOOLS = {  # the tool that brings back what startup left out
    "crystals": "get_crystals",
    "summaries": "get_recent_summaries",
    "anchors": "anchor_list",
    "space": "list_spaces",
}

LOG_TEXT_CHARS = 1000
"""The recall log keeps each item's text up to this many characters, for the audit."""

_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="recall")


class RecallRequest(Request):
    context: str = Field(
        min_length=1, max_length=limits.CONTEXT_MAX_CHARS, description='"startup" or the moment.'
    )
    limit_per_layer: int = Field(5, ge=1, le=50)
    channel: str | None = Field(
        None,
        pattern=CHANNEL_PATTERN,
        description="The caller's channel: its turns are not news from other channels.",
    )
    session_id: str | None = Field(
        None,
        max_length=256,
        description="The caller's session: its turns are not news from other channels either.",
    )
    answering: list[Annotated[str, Field(pattern=EVENT_UID_PATTERN)]] = Field(
        default_factory=list,
        max_length=limits.ANSWERING_MAX,
        description="The event_uids of the event this recall is for (a prompt, in all its"
        " parts): no layer returns them, even when they are already stored.",
    )
    max_tokens: int = Field(2000, ge=100, le=200_000)
    max_chars: int | None = Field(
        None,
        ge=limits.MAX_CHARS_MIN,
        le=limits.MAX_CHARS_MAX,
        description="Most characters of `context`, the formatted block: items are kept in"
        " priority order and the block says what was left out and how to get it.",
    )
    trace: bool = Field(False, description="Show each item's signals: why it surfaced.")


class Item(BaseModel):
    layer: str
    text: str
    score: float
    source: dict[str, Any]
    signals: dict[str, float] | None = None


class LayerReport(BaseModel):
    status: Literal["ok", "timeout", "down", "empty", "waiting"]
    count: int = 0
    chars: int = 0
    latency_ms: float = 0.0
    budget_ms: float | None = Field(None, description="The layer's time budget.")
    detail: str | None = None


class Dropped(BaseModel):
    """An item a layer found that the answer does not hold, and why (with `trace`)."""

    layer: str
    text: str
    score: float
    source: dict[str, Any]
    reason: Literal["duplicate", "max_tokens", "max_chars"]
    detail: str


class Recall(BaseModel):
    context: str = Field(description="The formatted block, ready to inject.")
    items: list[Item]
    manifest: dict[str, LayerReport]
    unsummarized: int
    warning: str | None
    more_unsummarized: int = Field(
        0, description="Startup: unsummarized turns not included (past the cap, or max_chars)."
    )
    left_out: dict[str, int] = Field(
        default_factory=dict, description="Items left out to stay within max_chars, by layer."
    )
    dropped: list[Dropped] | None = Field(
        None,
        description="With `trace`: what layers found and fusion dropped (a duplicate of a"
        " better item, past max_tokens or max_chars), and why.",
    )
    latency_ms: float


Layer = Callable[[], list[Item]]


def recall(runtime: Layers, entity: str, request: RecallRequest) -> Recall:
    began = time.perf_counter()
    counting = _pool.submit(summaries.unsummarized_count, runtime.db, entity)
    startup = request.context.strip().lower() == "startup"
    dropped: list[Dropped] = []
    if startup:
        items, manifest, more = _startup(runtime, entity, request)
        chosen = items  # startup keeps everything it gathered: fidelity over thrift
    else:
        items, manifest = _ambient(runtime, entity, request, dropped)
        chosen, more = _trim(items, request.max_tokens), 0
        dropped += _dropped(items, chosen, "max_tokens", f"past max_tokens {request.max_tokens}")
    unsummarized = counting.result()
    warning = summaries.warning(unsummarized, runtime.settings)
    left_out: dict[str, int] = {}
    if request.max_chars is not None:  # ... unless the caller can take only so much
        fitted, left_out = _fit(chosen, startup, unsummarized, more, request.max_chars, warning)
        dropped += _dropped(chosen, fitted, "max_chars", f"past max_chars {request.max_chars}")
        chosen = fitted
        more += left_out.get("unsummarized", 0)
    for layer, report in manifest.items():
        kept = [item for item in chosen if item.layer == layer]
        report.count, report.chars = len(kept), sum(len(item.text) for item in kept)
        if report.status == "ok" and not kept:
            report.status = "empty"
    latency = round((time.perf_counter() - began) * 1000, 1)
    if runtime.settings.recall_log:
        _log(runtime.db, entity, request, chosen, manifest, latency)
    if not request.trace:
        for item in chosen:
            item.signals = None
    return Recall(
        context=_format(chosen, unsummarized, more, left_out, request.max_chars, startup, warning),
        items=chosen,
        manifest=manifest,
        unsummarized=unsummarized,
        warning=warning,
        more_unsummarized=more,
        left_out=left_out,
        dropped=dropped if request.trace else None,
        latency_ms=latency,
    )


def _dropped(before: list[Item], after: list[Item], reason, detail: str) -> list[Dropped]:
    kept = {id(item) for item in after}
    return [
        Dropped(
            layer=item.layer,
            text=item.text,
            score=item.score,
            source=item.source,
            reason=reason,
            detail=detail,
        )
        for item in before
        if id(item) not in kept
    ]


class LogEntry(BaseModel):
    id: int
    context: str
    channel: str | None
    latency_ms: float
    items: list[dict[str, Any]]
    manifest: dict[str, Any]
    created_at: str


class Log(BaseModel):
    entries: list[LogEntry]


class LogQuery(Request):
    limit: int = Field(50, ge=1, le=500)
    id: int | None = Field(None, ge=1, le=INT64_MAX, description="One entry, by its id.")
    channel: str | None = Field(
        None, pattern=CHANNEL_PATTERN, description="Recalls from one channel."
    )
    contains: str | None = Field(
        None, min_length=1, max_length=200, description="Recalls whose context holds this text."
    )


def log_entries(db, entity: str, ask: LogQuery) -> Log:
    """The newest recall log entries, for audits (what surfaced, why, how fast), filtered
    by id, channel or the text of their context (any case)."""
    where, params = ["entity = ?"], [entity]
    if ask.id is not None:
        where.append("id = ?")
        params.append(ask.id)
    if ask.channel is not None:
        where.append("channel = ?")
        params.append(ask.channel)
    if ask.contains is not None:
        where.append("instr(lower(context), lower(?)) > 0")
        params.append(ask.contains)
    rows = db.conn.execute(
        f"SELECT * FROM recall_log WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?",
        [*params, ask.limit],
    )
    entries = [
        LogEntry.model_validate(
            {
                **dict(row),
                "items": json.loads(row["items"]),
                "manifest": json.loads(row["manifest"]),
            }
        )
        for row in rows
    ]
    return Log(entries=entries)


def _log(db, entity, request, chosen, manifest, latency) -> None:
    items = [
        {
            "layer": i.layer,
            "score": i.score,
            "source": i.source,
            "signals": i.signals,
            "text": i.text[:LOG_TEXT_CHARS],
        }
        for i in chosen
    ]
    with db.dropping("recall_log"), db.write() as conn:  # a full disk never fails a recall
        conn.execute(
            "INSERT INTO recall_log (entity, context, channel, latency_ms, items, manifest,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                entity,
                request.context[:2000],
                request.channel,
                latency,
                json.dumps(items),
                json.dumps({k: v.model_dump() for k, v in manifest.items()}),
                timestamps.now(),
            ),
        )


# --- startup ---


def _startup(runtime: Layers, entity: str, request: RecallRequest):
    settings, db, n = runtime.settings, runtime.db, request.limit_per_layer
    home = runtime.index.home(entity)
    page: dict[str, Any] = {}

    def crystal_items() -> list[Item]:
        found = crystals.current(
            home.root, crystals.CurrentQuery(count=min(n, settings.crystal_keep))
        ).crystals
        return [
            Item(layer="crystals", text=c.content, score=1.0, source={"path": c.path})
            for c in found
        ]

    def summary_items() -> list[Item]:
        return [
            _summary_item(s, 1.0)
            for s in summaries.recent(db, entity, summaries.RecentQuery(limit=n)).summaries
        ]

    def anchor_items() -> list[Item]:
        newest = anchors.list_all(runtime.index, entity).anchors[:n]
        return [
            Item(
                layer="anchors",
                text=_read(home, a.path),
                score=1.0,
                source={"path": a.path, "title": a.title, "date": a.date},
            )
            for a in newest
        ]

    def space_items() -> list[Item]:
        view = inventory.current_space(db, entity, request.channel)
        if view is None and request.channel:  # none entered on this channel: the last one
            view = inventory.current_space(db, entity)
        return [] if view is None else [_space_item(view)]

    def turn_items() -> list[Item]:
        # The newest turns past the cap, in reading order: the older ones are a tool away.
        ask = summaries.SinceSummaryQuery(limit=STARTUP_TURN_CAP, oldest_first=False)
        found = summaries.turns_since_summary(db, runtime.settings, entity, ask)
        page["more"] = max(found.unsummarized - len(found.turns), 0)
        return [_turn_item(turn, "unsummarized", 1.0) for turn in reversed(found.turns)]

    layers = {
        "crystals": crystal_items,
        "summaries": summary_items,
        "anchors": anchor_items,
        "space": space_items,
        "unsummarized": turn_items,
    }
    budgets = dict.fromkeys(layers, settings.recall_startup_budget_ms)
    results, manifest = _fan_out(layers, budgets, set(request.answering))
    items = [item for name in layers for item in results.get(name, [])]
    return items, manifest, page.get("more", 0)


# --- ambient ---


def _ambient(runtime: Layers, entity: str, request: RecallRequest, dropped: list[Dropped]):
    settings, db, index, n = runtime.settings, runtime.db, runtime.index, request.limit_per_layer
    context = request.context[:QUERY_CHARS]
    answering = set(request.answering)

    vector, without = _embed_once(index, context)

    # Word-photos and turns are two searches, not one split afterwards: in a single
    # ranking 100k turns crowd out every word-photo (bench/recall.py's corpus: none of
    # the 187 kept, even at limit 100).
    def anchor_items() -> list[Item]:
        query = search.SearchRequest(query=context, tiers="shortform,domain", limit=n)
        found = search.search(index, entity, query, query_vector=vector, reranked=False)
        return [_search_item("anchors", r) for r in found.results]

    def turn_items() -> list[Item]:
        # The events being answered would be the best matches of all: ask for that many more.
        limit = min(n + len(answering), search.MAX_LIMIT)
        query = search.SearchRequest(query=context, tiers="longform", limit=limit)
        found = search.search(index, entity, query, query_vector=vector, reranked=False).results
        found = [r for r in found if r.event_uid not in answering][:n]
        roles = _roles(db, entity, [r.event_uid for r in found if r.event_uid])
        return [_search_item("turns", r, roles) for r in found]

    def graph_items() -> list[Item]:
        query = texture.SearchQuery(query=context, limit=n)
        as_list = None if vector is None else vector.tolist()
        found = texture.search(runtime.graph, db, entity, query, vector=as_list)
        if found.status != "ok":
            raise LayerDown(found.status)
        return [
            Item(
                layer="graph",
                text=fact.fact,
                score=1.0 / (1 + rank),
                source={
                    "fact_uuid": fact.uuid,
                    "event_uids": fact.event_uids,
                    "valid_at": fact.valid_at,
                    "invalid_at": fact.invalid_at,
                },
            )
            for rank, fact in enumerate(found.facts)
        ]

    def summary_items() -> list[Item]:
        try:
            ask = summaries.SummarySearch(query=context, limit=n)
            hits = summaries.search(db, entity, ask).results
        except InputError:  # no searchable words in the context
            return []
        return [_summary_item(hit.summary, hit.score) for hit in hits]

    def recent_items() -> list[Item]:
        turns = _recent_elsewhere(db, entity, request)
        return [_turn_item(turn, "recent", 1.0) for turn in turns]

    def inventory_items() -> list[Item]:
        return _named_things(db, entity, request.context)

    layers = {
        "anchors": anchor_items,
        "turns": turn_items,
        "graph": graph_items,
        "summaries": summary_items,
        "recent": recent_items,
        "inventory": inventory_items,
    }
    budgets = {name: settings.recall_budget_ms for name in layers}
    budgets["graph"] = settings.recall_graph_budget_ms
    results, manifest = _fan_out(layers, budgets, answering)
    graph = manifest["graph"]
    if graph.status == "ok" and not results["graph"]:  # empty: say why, where it waits
        why = texture.waiting(runtime.graph, db, settings, entity)
        if why is not None:
            graph.status, graph.detail = "waiting", why
    for name in ("anchors", "turns"):
        if without is not None and manifest[name].status == "ok":
            manifest[name].detail = f"ranked by words alone: {without}"
    return _fuse(results, dropped), manifest


def _embed_once(index, context: str):
    """The context as a vector, for every layer that ranks by meaning, or None and why
    not when the model cannot run now, or is still loading (those layers then rank by
    words): a recall never waits for the model."""
    try:
        return index.embedder(wait=False).embed_one(context), None
    except embeddings.Unavailable as exc:
        return None, str(exc)


class LayerDown(Exception):
    """A layer that cannot answer now (its service is off or unreachable)."""


def _fan_out(layers: dict[str, Layer], budgets: dict[str, float], answering: set[str]):
    """Run every layer at once; wait for each no longer than its budget (in ms). What a
    layer found from the events being answered (and from nothing else) is dropped."""
    started = time.perf_counter()
    futures = {name: _pool.submit(_timed, layer) for name, layer in layers.items()}
    results: dict[str, list[Item]] = {}
    manifest: dict[str, LayerReport] = {}
    for name, future in futures.items():
        remaining = budgets[name] / 1000 - (time.perf_counter() - started)
        try:
            found, latency = future.result(timeout=max(remaining, 0.0))
        except FutureTimeout:
            manifest[name] = LayerReport(
                status="timeout",
                latency_ms=budgets[name],
                budget_ms=budgets[name],
                detail="over its time budget; skipped",
            )
            continue
        except LayerDown as exc:
            manifest[name] = LayerReport(status="down", budget_ms=budgets[name], detail=str(exc))
            continue
        except Exception as exc:  # a failing layer is reported, never fatal
            detail = f"{type(exc).__name__}: {exc}"
            manifest[name] = LayerReport(status="down", budget_ms=budgets[name], detail=detail)
            continue
        results[name] = [item for item in found if not _answered(item, answering)]
        manifest[name] = LayerReport(status="ok", latency_ms=latency, budget_ms=budgets[name])
    return results, manifest


def _answered(item: Item, answering: set[str]) -> bool:
    """The item comes from the events being answered: a turn that is one of them, or a
    fact drawn from them alone."""
    if not answering:
        return False
    if item.source.get("event_uid") in answering:
        return True
    uids = item.source.get("event_uids")
    return bool(uids) and all(uid in answering for uid in uids)


def _timed(layer: Layer) -> tuple[list[Item], float]:
    began = time.perf_counter()
    found = layer()
    return found, round((time.perf_counter() - began) * 1000, 1)


def _fuse(results: dict[str, list[Item]], dropped: list[Dropped] | None = None) -> list[Item]:
    """Rank fusion across layers; duplicates (the same event, file lines or text) keep
    their best entry, and the others go to `dropped`. Items that fuse equal (each
    layer's best, where the layers weigh the same) go in the order of their layer's own
    score: word-photos and turns are scored alike, by the search service."""
    best_possible = 1.0 / (RANK_K + 1)
    fused: dict[str, Item] = {}
    for layer, items in results.items():
        top = max((item.score for item in items), default=0.0) or 1.0
        for rank, item in enumerate(sorted(items, key=lambda i: -i.score)):
            relative = item.score / top
            rank_part = WEIGHTS.get(layer, 0.5) / (RANK_K + 1 + rank) / best_possible
            score = round(rank_part * (0.25 + 0.75 * relative), 4)
            item.signals = {
                "layer_score": round(item.score, 4),
                "layer_rank": float(rank + 1),
                "layer_weight": WEIGHTS.get(layer, 0.5),
                "fused": score,
            }
            item.score = score
            key = _identity(item)
            loser = fused.get(key)
            if loser is None or loser.score < score:
                fused[key] = item
            else:
                loser = item
            if loser is not None and dropped is not None:
                kept = fused[key]
                why = f"the same memory as a better {kept.layer} item (score {kept.score})"
                dropped += _dropped([loser], [], "duplicate", why)
    return sorted(fused.values(), key=lambda i: (-i.score, -i.signals["layer_score"]))


def _trim(items: list[Item], max_tokens: int) -> list[Item]:
    budget, chosen = max_tokens * CHARS_PER_TOKEN, []
    for item in items:
        if len(item.text) <= budget:
            chosen.append(item)
            budget -= len(item.text)
    return chosen


def _recent_elsewhere(db, entity: str, request: RecallRequest) -> list[Event]:
    """The newest turns of each other channel (the caller's own channel and session are
    in its context already), at most a few per channel, from the entity's latest
    activity; never markers, never the events being answered."""
    quota = max(1, request.limit_per_layer // 2)
    rows = db.conn.execute(
        "SELECT * FROM events WHERE entity = ? ORDER BY created_at DESC, id DESC LIMIT ?",
        (entity, RECENT_WINDOW),
    ).fetchall()
    answering = set(request.answering)
    taken: dict[str, int] = {}
    found = []
    for row in rows:
        channel = row["channel"]
        if (
            is_marker(row["event_type"])
            or row["event_uid"] in answering
            or channel == request.channel
            or (request.session_id is not None and row["session_id"] == request.session_id)
            or taken.get(channel, 0) >= quota
        ):
            continue
        taken[channel] = taken.get(channel, 0) + 1
        found.append(Event.from_row(row))
    return found[: request.limit_per_layer]


def _named_things(db, entity: str, context: str) -> list[Item]:
    """Inventory items and spaces whose names the context mentions."""
    lowered = context.lower()
    items = []
    for space in inventory.list_spaces(db, entity).spaces:
        if _mentions(lowered, space.name):
            items.append(_space_item(inventory.view(db, entity, space), layer="inventory"))
    for item in inventory.list_items(db, entity, inventory.ItemQuery(limit=1000)).items:
        if _mentions(lowered, item.name):
            text = f"{item.name} ({item.category}): {item.description}".strip()
            items.append(
                Item(
                    layer="inventory",
                    text=text,
                    score=1.0,
                    source={"inventory_item": item.name, "category": item.category},
                )
            )
    return items


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name.lower())}\b", text) is not None


def _roles(db, entity: str, uids: list[str]) -> dict[str, str | None]:
    """The role of each of these events (a search result carries only the author)."""
    rows = db.conn.execute(
        "SELECT event_uid, role FROM events WHERE entity = ?"
        " AND event_uid IN (SELECT value FROM json_each(?))",
        (entity, json.dumps(uids)),
    )
    return dict(rows.fetchall())


def _search_item(layer: str, result: search.SearchResult, roles: dict | None = None) -> Item:
    if result.event_uid is not None:
        role = (roles or {}).get(result.event_uid)
        source = {
            "event_uid": result.event_uid,
            "channel": result.channel,
            "author": result.author,
            "role": role,
            "created_at": result.created_at,
        }
        text = _said(result.created_at, result.channel, _who(result.author, role), result.text)
    else:
        source = {
            "path": result.path,
            "start_line": result.start_line,
            "end_line": result.end_line,
            "kind": result.kind,
        }
        text = result.text
    return Item(layer=layer, text=text, score=result.score, source=source)


def _summary_item(summary: summaries.Summary, score: float) -> Item:
    return Item(
        layer="summaries",
        text=summary.summary_text,
        score=score,
        source={
            "summary_id": summary.id,
            "start_id": summary.start_id,
            "end_id": summary.end_id,
            "first_at": summary.first_at,
            "last_at": summary.last_at,
        },
    )


def _who(author: str | None, role: str | None) -> str | None:
    """Who said a turn, the same in every layer: its author, else its role."""
    return author or role or None


def _said(created_at: str | None, channel: str | None, who: str | None, text: str) -> str:
    when = (created_at or "")[:16].replace("T", " ")
    return f"[{when} {channel}] {who}: {text}" if who else f"[{when} {channel}] {text}"


def _turn_item(turn: Event, layer: str, score: float) -> Item:
    return Item(
        layer=layer,
        text=_said(turn.created_at, turn.channel, _who(turn.author, turn.role), turn.content),
        score=score,
        source={
            "event_uid": turn.event_uid,
            "id": turn.id,
            "channel": turn.channel,
            "created_at": turn.created_at,
        },
    )


def _space_item(view: inventory.SpaceView, layer: str = "space") -> Item:
    things = ", ".join(item.name for item in view.items) or "nothing listed"
    text = f"{view.space.name}: {view.space.description}\nHere: {things}"
    return Item(layer=layer, text=text, score=1.0, source={"space": view.space.name})


def _read(home, relative: str) -> str:
    """A file's text without its front matter (which is metadata, not memory)."""
    try:
        lines = home.path(relative).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    _, body = chunks.front_matter(lines)
    return "\n".join(lines[body:]).strip()


def _identity(item: Item) -> str:
    """What makes two items the same memory, whichever layer found them."""
    source = item.source
    if source.get("event_uid"):
        return f"event:{source['event_uid']}"
    text = " ".join(item.text.split()).lower()
    return "text:" + hashlib.sha256(text.encode()).hexdigest()


def _format(
    items: list[Item],
    unsummarized: int,
    more: int,
    left_out: dict[str, int] | None = None,
    max_chars: int | None = None,
    startup: bool = False,
    warning: str | None = None,
) -> str:
    """One markdown block, grouped by layer, each item with where it came from; empty when
    there is nothing to recall (a hook then injects nothing)."""
    if not items and not unsummarized:
        return ""
    lines = _head()
    for layer, title in TITLES.items():
        group = [item for item in items if item.layer == layer]
        if not group:
            continue
        lines += ["", f"## {title}"]
        lines += [_line(item) for item in group]
    lines += _foot(unsummarized, more, left_out or {}, max_chars, startup, warning)
    return "\n".join(lines)


def _head() -> list[str]:
    return [f"# Memory (ambient recall, {timestamps.now()[:16].replace('T', ' ')} UTC)"]


def _line(item: Item) -> str:
    return f"- {item.text.strip()}  _({_cite(item.source)})_"


def _foot(
    unsummarized: int,
    more: int,
    left_out: dict[str, int],
    max_chars: int | None,
    startup: bool,
    warning: str | None,
) -> list[str]:
    """The count, what was not shown and how to get it, and the warning."""
    lines = ["", f"Unsummarized turns: {unsummarized}"]
    if more:
        lines.append(f"({more} older unsummarized turns not shown: get_turns_since_summary)")
    for layer, count in left_out.items():
        if count and layer != "unsummarized":
            tool = STARTUP_TOOLS.get(layer, "ambient_recall") if startup else "ambient_recall"
            lines.append(f"({count} {LEFT_OUT.get(layer, 'items')} not shown: {tool})")
    if any(left_out.values()):
        lines.append(f"(cut to fit {max_chars:,} characters)")
    if warning:
        lines.append(f"Warning: {warning}")
    return lines


def _fit(
    items: list[Item],
    startup: bool,
    unsummarized: int,
    more: int,
    max_chars: int,
    warning: str | None,
) -> tuple[list[Item], dict[str, int]]:
    """The items whose formatted block fits in `max_chars`, and how many of each layer
    were left out. Items are taken in priority order while they fit: for startup,
    crystals, the current space, the newest summary, the newest unsummarized turns,
    word-photos, the other summaries, each layer newest first and without gaps (a layer
    that stops fitting takes no more); otherwise best first. The block keeps its order."""
    totals: dict[str, int] = {}
    for item in items:
        totals[item.layer] = totals.get(item.layer, 0) + 1
    # The head and foot as long as they can get: every item left out, and told so.
    hidden = more + totals.get("unsummarized", 0)
    worst = _foot(unsummarized, hidden, totals, max_chars, startup, warning)
    used = len("\n".join(_head() + worst))
    kept: set[int] = set()
    shown: set[str] = set()
    closed: set[str] = set()
    left_out: dict[str, int] = {}
    for item in _startup_priority(items) if startup else items:
        cost = len(_line(item)) + 1
        if item.layer not in shown:
            cost += len(TITLES[item.layer]) + 5  # "" and "## title", each a line
        if item.layer not in closed and used + cost <= max_chars:
            used += cost
            kept.add(id(item))
            shown.add(item.layer)
        else:
            left_out[item.layer] = left_out.get(item.layer, 0) + 1
            if startup:
                closed.add(item.layer)
    return [item for item in items if id(item) in kept], left_out


def _startup_priority(items: list[Item]) -> list[Item]:
    """Startup's items, most important first (each layer arrives oldest first)."""
    by_layer = {layer: [item for item in items if item.layer == layer] for layer in TITLES}
    newest_summaries = by_layer["summaries"][::-1]
    return [
        *by_layer["crystals"][::-1],
        *by_layer["space"],
        *newest_summaries[:1],
        *by_layer["unsummarized"][::-1],
        *by_layer["anchors"],
        *newest_summaries[1:],
    ]


def _cite(source: dict[str, Any]) -> str:
    if "path" in source and source.get("start_line"):
        return f"{source['path']}:{source['start_line']}-{source['end_line']}"
    for key in ("path", "event_uid", "fact_uuid", "summary_id", "space", "inventory_item"):
        if source.get(key) is not None:
            return f"{key} {source[key]}" if key != "path" else str(source[key])
    return json.dumps(source)
