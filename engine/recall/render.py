"""Rendering: the recall as one markdown block to inject, grouped by layer, each item as
its text (a file's with its path and lines, a word-photo's with its name; every item's
full source is in the answer's `items`), and a foot that counts the unsummarized turns,
says what was left out and which tool brings it back, and at startup gives the warning.

`max_chars` caps the block (a hook's injection): `fit` keeps items in priority order
(startup: crystals, the current space, the newest summary, the newest unsummarized
turns, word-photos, older summaries; otherwise the fused order) while the block fits.
"""

from __future__ import annotations

from engine.kernel import timestamps
from engine.recall.shapes import Item
from engine.search import homes

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


def block(
    items: list[Item],
    unsummarized: int,
    more: int,
    left_out: dict[str, int] | None = None,
    max_chars: int | None = None,
    startup: bool = False,
    warning: str | None = None,
) -> str:
    """One markdown block, grouped by layer, an entry per item; empty when there is
    nothing to recall (a hook then injects nothing)."""
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


def fit(
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


def _head() -> list[str]:
    return [f"# Memory (ambient recall, {timestamps.now()[:16].replace('T', ' ')} UTC)"]


def _line(item: Item) -> str:
    """An item as one entry: its text, and a file's name (a word-photo's, which the
    anchor tools take) or path and lines (what opens it again). A turn tells when, where
    and who already; a fact, summary, space or thing is its text: their ids are in the
    answer's `items`, not repeated here."""
    path = item.source.get("path")
    if path is None:
        return f"- {item.text.strip()}"
    folder, _, name = str(path).partition("/")
    start = item.source.get("start_line")
    if folder == homes.WORD_PHOTOS:
        where = name
    else:
        where = f"{path}:{start}-{item.source.get('end_line')}" if start else str(path)
    return f"- {item.text.strip()}  ({where})"


def _foot(
    unsummarized: int,
    more: int,
    left_out: dict[str, int],
    max_chars: int | None,
    startup: bool,
    warning: str | None,
) -> list[str]:
    """The count, what was not shown and how to get it, and at startup the warning."""
    lines = ["", f"Unsummarized turns: {unsummarized}"]
    if more:
        lines.append(f"({more} older unsummarized turns not shown: get_turns_since_summary)")
    for layer, count in left_out.items():
        if count and layer != "unsummarized":
            tool = STARTUP_TOOLS.get(layer, "ambient_recall") if startup else "ambient_recall"
            lines.append(f"({count} {LEFT_OUT.get(layer, 'items')} not shown: {tool})")
    if any(left_out.values()):
        lines.append(f"(cut to fit {max_chars:,} characters)")
    if warning and startup:  # once a session, not on every prompt (the answer keeps it)
        lines.append(f"Warning: {warning}")
    return lines


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
