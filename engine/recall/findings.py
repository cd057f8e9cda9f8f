"""Each layer's findings as recall items: a turn as when, where and who said what (its
author, else its role, the same in every layer), a file's lines without its front matter,
a summary with the range it covers, a space with what is in it."""

from __future__ import annotations

from engine.capture.events import Event
from engine.crystal import summaries
from engine.inventory import items as inventory
from engine.recall.shapes import Item
from engine.search import chunks
from engine.search import hybrid as search
from engine.search.homes import Home


def search_item(layer: str, result: search.SearchResult, roles: dict | None = None) -> Item:
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


def summary_item(summary: summaries.Summary, score: float) -> Item:
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


def turn_item(turn: Event, layer: str, score: float) -> Item:
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


def space_item(view: inventory.SpaceView, layer: str = "space") -> Item:
    things = ", ".join(item.name for item in view.items) or "nothing listed"
    text = f"{view.space.name}: {view.space.description}\nHere: {things}"
    return Item(layer=layer, text=text, score=1.0, source={"space": view.space.name})


def read(home: Home, relative: str) -> str:
    """A file's text without its front matter (which is metadata, not memory)."""
    try:
        lines = home.path(relative).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    _, body = chunks.front_matter(lines)
    return "\n".join(lines[body:]).strip()
