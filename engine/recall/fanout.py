"""Fan-out: every layer asked at once, each under its own time budget (its findings made
recall items by engine.recall.findings).

`startup` gathers what a clean context needs to wake up as itself: the newest crystals,
recent summaries, recent word-photos, the current space, and the unsummarized turns (the
newest STARTUP_TURN_CAP of them).

Any other context (`ambient`) is embedded once and fans out to word-photos, fragments
and memory files; raw turns; graph facts; summaries; the last day's turns from the other
channels (a quota per channel, so one busy channel cannot crowd out the rest); and
inventory items or spaces the context names. A layer that fails or runs out of time is
reported in the manifest and skipped; recall always answers.

What the caller says about itself shapes what the layers find: `answering` names the
event(s) the recall is for (a prompt, whose own event may be stored before its recall
runs), which no layer returns; `channel` and `session_id` are where the caller is, so
news from other channels is neither; and the caller holds its own session's turns
already (a hook's host has them in its context), so no layer returns a turn of
`session_id`. Markers (engine.capture.markers) are never turns here.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from engine.capture import events as capture
from engine.capture.events import Event
from engine.crystal import crystals, summaries
from engine.graph import texture
from engine.graph.backend import Graph
from engine.inventory import items as inventory
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.kernel.errors import InputError
from engine.recall import findings
from engine.recall.shapes import Item, LayerReport, RecallRequest
from engine.search import anchors, embeddings, rerank
from engine.search import hybrid as search
from engine.search.index import Index
from engine.store.db import Database


class Layers(Protocol):
    """What recall reads: the running server's engine.runtime.Runtime is one."""

    settings: Settings
    db: Database
    index: Index
    graph: Graph | None


STARTUP_TURN_CAP = 200
RECENT_WINDOW = 200  # the latest turns looked at for news from other channels ...
NEWS_HOURS = 24  # ... said within this many hours: an older one is not news, but a past turn
OWN_SESSION_EXTRA = 20  # more turns searched for when the caller's session's are left out
QUERY_CHARS = 4096  # what search and the graph take as a query (the model reads less)

pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="recall")
"""The threads the layers (and the unsummarized count beside them) run on."""
MAX_RUNNING = 2
"""A layer's calls still running from recalls that stopped waiting for them, past which
the layer is skipped: one that hangs (a graph server gone without closing its
connections) holds two of the pool's threads, never all of them."""
_running: Counter[str] = Counter()
_running_lock = threading.Lock()

Layer = Callable[[], list[Item]]
Found = tuple[dict[str, list[Item]], dict[str, LayerReport]]
"""Each layer's items, and each layer's report for the manifest."""


class LayerDown(Exception):
    """A layer that cannot answer now (its service is off or unreachable)."""


# --- startup ---


def startup(
    runtime: Layers, entity: str, request: RecallRequest
) -> tuple[list[Item], dict[str, LayerReport], int]:
    """Startup's items in their layers' order, the manifest, and how many unsummarized
    turns are past the cap."""
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
            findings.summary_item(s, 1.0)
            for s in summaries.recent(db, entity, summaries.RecentQuery(limit=n)).summaries
        ]

    def anchor_items() -> list[Item]:
        newest = anchors.list_all(runtime.index, entity).anchors[:n]
        return [
            Item(
                layer="anchors",
                text=findings.read(home, a.path),
                score=1.0,
                source={"path": a.path, "title": a.title, "date": a.date},
            )
            for a in newest
        ]

    def space_items() -> list[Item]:
        view = inventory.current_space(db, entity, request.channel)
        if view is None and request.channel:  # none entered on this channel: the last one
            view = inventory.current_space(db, entity)
        return [] if view is None else [findings.space_item(view)]

    def turn_items() -> list[Item]:
        # The newest turns past the cap, in reading order: the older ones are a tool away.
        ask = summaries.SinceSummaryQuery(limit=STARTUP_TURN_CAP, oldest_first=False)
        found = summaries.turns_since_summary(db, runtime.settings, entity, ask)
        page["more"] = max(found.unsummarized - len(found.turns), 0)
        turns = [turn for turn in found.turns if not _own(turn.session_id, request)]
        return [findings.turn_item(turn, "unsummarized", 1.0) for turn in reversed(turns)]

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


def ambient(runtime: Layers, entity: str, request: RecallRequest) -> Found:
    """What each layer found for the context, to be fused."""
    settings, db, index, n = runtime.settings, runtime.db, runtime.index, request.limit_per_layer
    context = request.context[:QUERY_CHARS]
    answering = set(request.answering)

    vector, without = _embed_once(index, context)
    floor = embeddings.bears(settings)
    reading = rerank.Reading(settings.recall_rerank, settings.recall_rerank_budget_ms)

    # Word-photos and turns are two searches, not one split afterwards: in a single
    # ranking 100k turns crowd out every word-photo (bench/recall.py's corpus: none of
    # the 187 kept, even at limit 100).
    def anchor_items() -> list[Item]:
        query = search.SearchRequest(query=context, tiers="shortform,domain", limit=n)
        found = search.search(
            index, entity, query, query_vector=vector, reranked=False, floor=floor
        )
        return [findings.search_item("anchors", r) for r in found.results]

    def turn_items() -> list[Item]:
        # The events being answered would be the best matches of all, and the caller's own
        # session's turns the next best: ask for that many more.
        extra = len(answering) + (OWN_SESSION_EXTRA if request.session_id else 0)
        limit = min(n + extra, search.MAX_LIMIT)
        query = search.SearchRequest(query=context, tiers="longform", limit=limit)
        found = search.search(
            index, entity, query, query_vector=vector, reranked=reading, floor=floor
        ).results
        found = [r for r in found if r.event_uid not in answering]
        known = capture.roles_and_sessions(db, entity, [r.event_uid for r in found if r.event_uid])
        found = [
            r for r in found if not _own(known.get(r.event_uid or "", (None, None))[1], request)
        ]
        roles = {uid: role for uid, (role, _) in known.items()}
        return [findings.search_item("turns", r, roles) for r in found[:n]]

    words_only = False

    def graph_items() -> list[Item]:
        nonlocal words_only
        query = texture.SearchQuery(query=context, limit=n)
        as_list = None if vector is None else vector.tolist()
        found = texture.search(runtime.graph, db, entity, query, vector=as_list)
        if found.status != "ok":
            raise LayerDown(found.status)
        words_only = found.fallback is not None
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
        return [findings.summary_item(hit.summary, hit.score) for hit in hits]

    def recent_items() -> list[Item]:
        turns = _recent_elsewhere(db, entity, request)
        return [findings.turn_item(turn, "recent", 1.0) for turn in turns]

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
    if graph.status == "ok" and words_only:
        graph.detail = "ranked by words alone: the graph's vectors are being made again"
    return results, manifest


def _embed_once(index: Index, context: str) -> tuple[Any, str | None]:
    """The context as a vector, for every layer that ranks by meaning, or None and why
    not when the model cannot run now, or is still loading (those layers then rank by
    words): a recall never waits for the model."""
    try:
        return index.embedder(wait=False).embed_query(context), None
    except embeddings.Unavailable as exc:
        return None, str(exc)


def _fan_out(layers: dict[str, Layer], budgets: dict[str, float], answering: set[str]) -> Found:
    """Run every layer at once; wait for each no longer than its budget (in ms). What a
    layer found from the events being answered (and from nothing else) is dropped."""
    started = time.perf_counter()
    results: dict[str, list[Item]] = {}
    manifest: dict[str, LayerReport] = {}
    futures = {}
    for name, layer in layers.items():
        with _running_lock:
            running = _running[name]
            if running < MAX_RUNNING:
                _running[name] += 1
        if running >= MAX_RUNNING:
            detail = f"its last {running} calls have not returned; skipped"
            manifest[name] = LayerReport(status="timeout", budget_ms=budgets[name], detail=detail)
            continue
        futures[name] = pool.submit(_timed, name, layer)
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
    if not uids:
        return False
    return all(uid in answering for uid in uids)


def _timed(name: str, layer: Layer) -> tuple[list[Item], float]:
    began = time.perf_counter()
    try:
        found = layer()
    finally:
        with _running_lock:
            _running[name] -= 1
    return found, round((time.perf_counter() - began) * 1000, 1)


def _recent_elsewhere(db: Database, entity: str, request: RecallRequest) -> list[Event]:
    """The newest turns of each other channel (the caller's own channel and session are
    in its context already), at most a few per channel, from the entity's latest
    activity within NEWS_HOURS; never markers, never a replaced or deleted message, never
    the events being answered."""
    quota = max(1, request.limit_per_layer // 2)
    answering = set(request.answering)
    taken: dict[str, int] = {}
    found: list[Event] = []
    since = timestamps.from_datetime(datetime.now(UTC) - timedelta(hours=NEWS_HOURS))
    for event in capture.newest_turns(db, entity, RECENT_WINDOW):
        if event.created_at < since:  # newest first: the rest are older still
            break
        channel = event.channel
        if (
            event.event_uid in answering
            or channel == request.channel
            or _own(event.session_id, request)
            or taken.get(channel, 0) >= quota
        ):
            continue
        taken[channel] = taken.get(channel, 0) + 1
        found.append(event)
        if len(found) == request.limit_per_layer:
            break
    return found


def _own(session_id: str | None, request: RecallRequest) -> bool:
    """A turn of the caller's own session (which the caller holds already)."""
    return request.session_id is not None and session_id == request.session_id


def _named_things(db: Database, entity: str, context: str) -> list[Item]:
    """Inventory items and spaces whose names the context mentions."""
    lowered = context.lower()
    found = []
    for space in inventory.list_spaces(db, entity).spaces:
        if _mentions(lowered, space.name):
            found.append(findings.space_item(inventory.view(db, entity, space), layer="inventory"))
    for item in inventory.list_items(db, entity, inventory.ItemQuery(limit=1000)).items:
        if _mentions(lowered, item.name):
            text = f"{item.name} ({item.category}): {item.description}".strip()
            found.append(
                Item(
                    layer="inventory",
                    text=text,
                    score=1.0,
                    source={"inventory_item": item.name, "category": item.category},
                )
            )
    return found


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name.lower())}\b", text) is not None
