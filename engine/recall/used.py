"""Was it used: when the assistant's reply to a recall is captured (Claude Code's Stop
hook sends the transcript's assistant turns; the Discord adapter the bot's own message),
each item of the recalls before it in the same conversation (the reply's session, or its
channel for a recall that gave no session) is marked used or not, by the rule below.

The rule: an item was used when it shares at least USED_MIN_WORDS distinctive words
with the reply (words of three letters or more that are not common English words,
compared by a crude stem, digits kept). It was chosen on bench/data/used_pairs.jsonl
against embedding similarity (bench/used_rule.py; docs/ui.md, "Was it used", has the
figures). A recall is marked once, by the first reply after it (within REPLY_WINDOW);
marking runs inside capture's transaction as a listener, costs a few word sets, and an
error in it is logged and never fails the capture. Startup recalls are not marked:
they wake a session up, they do not answer a turn.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field

from engine.capture import events as capture
from engine.kernel import timestamps
from engine.recall.audit import item_key
from engine.store.db import Database

log = logging.getLogger("pps.recall.used")

USED_MIN_WORDS = 2
"""Distinctive words an item must share with the reply to count as used."""
REPLY_WINDOW = timedelta(hours=6)
"""A reply answers the recalls logged at most this long before it ..."""
REPLY_RECALLS = 10
"""... the newest this many of them not marked yet."""
WEEKS_SHOWN = 26

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_COMMON_WORDS = """
    a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can can't cannot could couldn't did didn't
    do does doesn't doing don't down during each even ever every few for from further get
    gets got had hadn't has hasn't have haven't having he he'd he'll he's her here here's
    hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's
    its itself just let let's like likes liked lot make made many maybe me more most much
    must mustn't my myself need needs new next no nor not now of off on once one only or
    other ought our ours ourselves out over own really right said same say says see she
    she'd she'll she's should shouldn't so some still such sure than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've
    thing things think this those though through time to too two under until up upon us
    use used very want wants was wasn't way we we'd we'll we're we've well were weren't
    what what's when when's where where's which while who who's whom why why's will with
    won't would wouldn't yes yet you you'd you'll you're you've your yours yourself
    yourselves okay ok good great last first back again today tonight week day days
    going go gone come came know knew feel felt look looks looked keep kept take took
    give gave try tried tell told ask asked call called put set bit little long
"""
_COMMON = frozenset(_COMMON_WORDS.split())
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


def words(text: str) -> set[str]:
    """The distinctive words of a text, by a crude stem: lower case, common words out,
    words of three letters or more (any number stays)."""
    found = set()
    for token in _WORD.findall(text.lower()):
        word = token.split("'")[0]
        if token in _COMMON or word in _COMMON or (len(word) < 3 and not word.isdigit()):
            continue
        for suffix in _SUFFIXES:
            if len(word) > len(suffix) + 3 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        found.add(word)
    return found


def is_used(item: str, reply: str) -> tuple[bool, int]:
    """The rule: (used, how many distinctive words the item shares with the reply)."""
    shared = len(words(item) & words(reply))
    return shared >= USED_MIN_WORDS, shared


def admit(batch: capture.Captured) -> None:
    """(A capture listener, in the batch's transaction.) Mark the recalls each new
    assistant reply answers; never raises."""
    try:
        for reply in batch.turns(role="assistant"):
            _mark(batch.conn, batch.entity, reply)
    except Exception:  # marking is a by-product: it never fails the capture
        log.exception("marking recalled items used failed; the events are stored")


def _mark(conn: sqlite3.Connection, entity: str, reply: capture.Event) -> None:
    # The reply's session, or (a caller that gave no session) its channel.
    same = "(session_id = ? OR (session_id IS NULL AND channel = ?))"
    now = timestamps.now()
    since = (datetime.now(UTC) - REPLY_WINDOW).strftime(timestamps.FORMAT)
    rows = conn.execute(
        f"SELECT id, items FROM recall_log WHERE entity = ? AND {same} AND context != 'startup'"
        " AND created_at >= ?"
        " AND NOT EXISTS (SELECT 1 FROM recall_used u WHERE u.log_id = recall_log.id)"
        " ORDER BY id DESC LIMIT ?",
        (entity, reply.session_id, reply.channel, since, REPLY_RECALLS),
    ).fetchall()
    said = words(reply.content)
    for row in rows:
        for rank, item in enumerate(json.loads(row["items"]), start=1):
            shared = len(words(item.get("text") or "") & said)
            used = shared >= USED_MIN_WORDS
            conn.execute(
                "INSERT INTO recall_used (entity, log_id, rank, layer, item_key, used, shared,"
                " reply_event_id, marked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (log_id, rank) DO NOTHING",
                (
                    entity,
                    row["id"],
                    rank,
                    item["layer"],
                    item_key(item.get("source") or {}),
                    used,
                    shared,
                    reply.id,
                    now,
                ),
            )


class LayerUsed(BaseModel):
    layer: str
    marked: int = Field(description="Recalled items marked (a reply came after them).")
    used: int
    share: float | None = Field(description="used / marked.")


class WeekUsed(BaseModel):
    week: str = Field(description="ISO week of the recalls, e.g. 2026-W07.")
    marked: int
    used: int
    share: float | None


class UsedShare(BaseModel):
    min_words: int = Field(USED_MIN_WORDS, description="The rule: shared distinctive words.")
    recalls: int = Field(description="Logged recalls whose items were marked.")
    marked: int
    used: int
    share: float | None
    layers: list[LayerUsed]
    weeks: list[WeekUsed] = Field(description="Oldest first, the latest 26 weeks marked.")


def marks(db: Database, entity: str, log_ids: list[int]) -> dict[tuple[int, int], bool]:
    """Whether each item of these logged recalls was used, by (log id, rank); an item
    not marked yet (no reply after it) is absent."""
    rows = db.conn.execute(
        "SELECT log_id, rank, used FROM recall_used WHERE entity = ?"
        " AND log_id IN (SELECT value FROM json_each(?))",
        (entity, json.dumps(log_ids)),
    )
    return {(row["log_id"], row["rank"]): bool(row["used"]) for row in rows}


def share(db: Database, entity: str) -> UsedShare:
    """The used share of this entity's marked items: in all, per layer, per ISO week."""
    by_layer: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_week: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    recalls = set()
    for row in db.conn.execute(
        "SELECT u.log_id, u.layer, u.used, l.created_at FROM recall_used u"
        " JOIN recall_log l ON l.id = u.log_id WHERE u.entity = ? AND l.entity = ?",
        (entity, entity),
    ):
        recalls.add(row["log_id"])
        for counts in (by_layer[row["layer"]], by_week[_week(row["created_at"])]):
            counts[0] += 1
            counts[1] += bool(row["used"])
    marked = sum(m for m, _ in by_layer.values())
    used = sum(u for _, u in by_layer.values())
    return UsedShare(
        recalls=len(recalls),
        marked=marked,
        used=used,
        share=_share(marked, used),
        layers=[
            LayerUsed(layer=layer, marked=m, used=u, share=_share(m, u))
            for layer, (m, u) in sorted(by_layer.items())
        ],
        weeks=[
            WeekUsed(
                week=week,
                marked=by_week[week][0],
                used=by_week[week][1],
                share=_share(*by_week[week]),
            )
            for week in sorted(by_week)[-WEEKS_SHOWN:]
        ],
    )


def _share(marked: int, used: int) -> float | None:
    return round(used / marked, 4) if marked else None


def _week(created_at: str) -> str:
    year, week, _ = timestamps.parse(created_at).isocalendar()
    return f"{year}-W{week:02d}"
