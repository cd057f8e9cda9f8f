"""ambient_recall, the one entry point the faces call: every layer in one call, fused,
trimmed to a token budget, rendered as one block.

A recall is "startup" (what a clean context needs to wake up as itself) or any other
context (the moment). The layers answer under their time budgets (engine.recall.fanout);
an ambient recall's answers are fused by rank and trimmed to `max_tokens`
(engine.recall.fusion), while startup keeps everything it gathered. `max_chars` then
caps the formatted block (engine.recall.render), which says what was left out and which
tool brings it back. A recall that names its session leaves out what earlier recalls of
the session gave it (engine.recall.held). Each recall is logged unless PPS_RECALL_LOG is
off (engine.recall.log).
"""

from __future__ import annotations

import time

from engine.crystal import summaries
from engine.recall import fanout, fusion, held, log, render
from engine.recall.shapes import Dropped, Recall, RecallRequest


def recall(runtime: fanout.Layers, entity: str, request: RecallRequest) -> Recall:
    began = time.perf_counter()
    counting = fanout.pool.submit(summaries.unsummarized_count, runtime.db, entity)
    startup = request.context.strip().lower() == "startup"
    dropped: list[Dropped] = []
    if startup:
        items, manifest, more = fanout.startup(runtime, entity, request)
        chosen = items  # startup keeps everything it gathered: fidelity over thrift
    else:
        results, manifest = fanout.ambient(runtime, entity, request)
        items = fusion.fuse(results, dropped)
        if request.session_id is not None:  # what the session holds already
            new = held.leave_out(runtime.db, entity, request.session_id, items)
            dropped += fusion.left_behind(items, new, "held", "the session holds it already")
            items = new
        chosen, more = fusion.trim(items, request.max_tokens), 0
        past = f"past max_tokens {request.max_tokens}"
        dropped += fusion.left_behind(items, chosen, "max_tokens", past)
    unsummarized = counting.result()
    warning = summaries.warning(unsummarized, runtime.settings)
    left_out: dict[str, int] = {}
    if request.max_chars is not None:  # ... unless the caller can take only so much
        fitted, left_out = render.fit(
            chosen, startup, unsummarized, more, request.max_chars, warning
        )
        past = f"past max_chars {request.max_chars}"
        dropped += fusion.left_behind(chosen, fitted, "max_chars", past)
        chosen = fitted
        more += left_out.get("unsummarized", 0)
    for layer, report in manifest.items():
        kept = [item for item in chosen if item.layer == layer]
        report.count, report.chars = len(kept), sum(len(item.text) for item in kept)
        if report.status == "ok" and not kept:
            report.status = "empty"
    if request.session_id is not None:
        held.remember(runtime.db, entity, request.session_id, chosen, again=startup)
    latency = round((time.perf_counter() - began) * 1000, 1)
    if runtime.settings.recall_log:
        log.write(runtime.db, runtime.settings, entity, request, chosen, manifest, latency)
    if not request.trace:
        for item in chosen:
            item.signals = None
    context = render.block(
        chosen, unsummarized, more, left_out, request.max_chars, startup, warning
    )
    return Recall(
        context=context,
        items=chosen,
        manifest=manifest,
        unsummarized=unsummarized,
        warning=warning,
        more_unsummarized=more,
        left_out=left_out,
        dropped=dropped if request.trace else None,
        latency_ms=latency,
    )
