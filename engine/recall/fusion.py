"""Fusion: the layers' items in one ranking, without duplicates, trimmed to a token budget.

Fusion across layers uses ranks, not each layer's raw score (a BM25 number and a graph
RRF position mean nothing to each other): an item's fused score is its layer's weight
over (RANK_K + its rank in the layer), scaled to [0, 1], times how strongly its own layer
rated it relative to that layer's best. Items are deduplicated by their text and taken
best first until `max_tokens` (4 characters a token) is reached.
"""

from __future__ import annotations

import hashlib

from engine.recall.shapes import Dropped, Item, Reason

RANK_K = 10
CHARS_PER_TOKEN = 4
WEIGHTS = {  # how much a layer's best item counts against another layer's best
    "anchors": 1.0,
    "graph": 0.9,
    "summaries": 0.8,
    "turns": 1.0,  # 0.8 put a theme's word-photo above the turn that answers (companion set)
    "inventory": 1.0,
    "recent": 0.5,
}


def fuse(results: dict[str, list[Item]], dropped: list[Dropped] | None = None) -> list[Item]:
    """Rank fusion across layers; duplicates (the same event, file lines or text) keep
    their best entry, and the others go to `dropped`. Items that fuse equal (each
    layer's best, where the layers weigh the same) go in the order of their layer's own
    score: word-photos and turns are scored alike, by the search service."""
    best_possible = 1.0 / (RANK_K + 1)
    fused: dict[str, Item] = {}
    own: dict[int, float] = {}  # each item's score in its own layer, for ties
    for layer, items in results.items():
        top = max((item.score for item in items), default=0.0) or 1.0
        for rank, item in enumerate(sorted(items, key=lambda i: -i.score)):
            relative = item.score / top
            rank_part = WEIGHTS.get(layer, 0.5) / (RANK_K + 1 + rank) / best_possible
            score = round(rank_part * (0.25 + 0.75 * relative), 4)
            own[id(item)] = round(item.score, 4)
            item.signals = {
                "layer_score": own[id(item)],
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
                dropped += left_behind([loser], [], "duplicate", why)
    return sorted(fused.values(), key=lambda i: (-i.score, -own[id(i)]))


def trim(items: list[Item], max_tokens: int) -> list[Item]:
    """The items, best first, that fit in `max_tokens` together."""
    budget, chosen = max_tokens * CHARS_PER_TOKEN, []
    for item in items:
        if len(item.text) <= budget:
            chosen.append(item)
            budget -= len(item.text)
    return chosen


def left_behind(
    before: list[Item], after: list[Item], reason: Reason, detail: str
) -> list[Dropped]:
    """The items of `before` that `after` does not hold, as dropped for `reason`."""
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


def _identity(item: Item) -> str:
    """What makes two items the same memory, whichever layer found them."""
    source = item.source
    if source.get("event_uid"):
        return f"event:{source['event_uid']}"
    text = " ".join(item.text.split()).lower()
    return "text:" + hashlib.sha256(text.encode()).hexdigest()
