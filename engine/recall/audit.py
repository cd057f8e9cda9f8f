"""The retrieval audit (the seed's quarterly review): draw logged recalls at random, judge
every item each surfaced relevant to its context or not, and see precision@k per layer
and by week. The judgments export as an evaluation set (JSONL) that bench/audit_score.py
scores a ranking against.

A judgment names its item by identity (`item_key`: the event, the file and its lines,
the fact, ...), so a replay of the same context can be scored against it whichever rank
the item now has. Recalls come from the recall log (PPS_RECALL_LOG); another entity's
logged recall is not found, the same as one that does not exist.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, Field

from engine.capture import events as capture
from engine.kernel import timestamps
from engine.kernel.errors import NotFound
from engine.kernel.requests import INT64_MAX, Request
from engine.store.db import Database

DRAW_DEFAULT = 50
WEEKS_SHOWN = 26


def item_key(source: dict[str, Any]) -> str:
    """What makes an item the same memory across recalls: its source, not its rank."""
    if source.get("event_uid"):
        return f"event:{source['event_uid']}"
    if source.get("fact_uuid"):
        return f"fact:{source['fact_uuid']}"
    if source.get("path"):
        if source.get("start_line"):
            return f"file:{source['path']}:{source['start_line']}-{source.get('end_line')}"
        return f"file:{source['path']}"
    if source.get("summary_id") is not None:
        return f"summary:{source['summary_id']}"
    if source.get("space"):
        return f"space:{source['space']}"
    if source.get("inventory_item"):
        return f"inventory:{source.get('category')}/{source['inventory_item']}"
    digest = hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest()[:32]
    return f"source:{digest}"


class DrawQuery(Request):
    n: int = Field(DRAW_DEFAULT, ge=1, le=500, description="How many logged recalls to draw.")
    seed: int | None = Field(
        None, ge=0, le=INT64_MAX, description="The same seed draws the same recalls."
    )
    unjudged: bool = Field(False, description="Only recalls with an item not judged yet.")


class AuditItem(BaseModel):
    rank: int = Field(description="Its place in the recall, 1 first.")
    layer: str
    score: float
    key: str = Field(description="The item's identity, which its judgment names.")
    source: dict[str, Any]
    text: str | None = Field(None, description="What surfaced (when the log or store has it).")
    relevant: bool | None = Field(None, description="The judgment; null when not judged.")


class AuditRecall(BaseModel):
    id: int
    context: str
    channel: str | None
    created_at: str
    items: list[AuditItem]


class Drawn(BaseModel):
    seed: int
    logged: int = Field(description="Logged recalls that surfaced something.")
    recalls: list[AuditRecall]


class JudgmentIn(Request):
    log_id: int = Field(ge=1, le=INT64_MAX, description="The logged recall.")
    rank: int = Field(ge=1, le=10_000, description="The item's place in that recall, 1 first.")
    relevant: bool
    by: str | None = Field(None, max_length=100, description="Who judged (default: the face).")


class Judgment(BaseModel):
    log_id: int
    rank: int
    layer: str
    item_key: str
    relevant: bool
    judged_by: str
    judged_at: str


class PrecisionQuery(Request):
    k: int = Field(5, ge=1, le=50, description="precision@k: the top k items of each recall.")


class LayerPrecision(BaseModel):
    layer: str
    recalls: int = Field(description="Recalls with a judged item of this layer in its top k.")
    judged: int
    relevant: int
    precision: float | None = Field(description="Mean over those recalls of precision@k.")


class WeekPrecision(BaseModel):
    week: str = Field(description="ISO week of the recalls, e.g. 2026-W07.")
    recalls: int
    judged: int
    precision: float | None


class Precision(BaseModel):
    k: int
    recalls: int = Field(description="Judged recalls (a judged item in their top k).")
    judged: int = Field(description="Judged items in those top k.")
    relevant: int
    precision: float | None
    layers: list[LayerPrecision]
    weeks: list[WeekPrecision] = Field(description="Oldest first, the latest 26 weeks judged.")


def draw(db: Database, entity: str, ask: DrawQuery) -> Drawn:
    """`n` logged recalls of this entity at random (ones that surfaced something), newest
    first, each item with its text and its judgment so far."""
    seed = ask.seed if ask.seed is not None else new_seed()
    rows = db.conn.execute(
        "SELECT id FROM recall_log WHERE entity = ? AND items != '[]' ORDER BY id", (entity,)
    ).fetchall()
    ids = [row["id"] for row in rows]
    if ask.unjudged:
        done = _fully_judged(db, entity)
        ids = [i for i in ids if i not in done]
    chosen = random.Random(seed).sample(ids, min(ask.n, len(ids)))
    recalls = [_recall(db, entity, i) for i in sorted(chosen, reverse=True)]
    return Drawn(seed=seed, logged=len(rows), recalls=recalls)


def new_seed() -> int:
    return random.SystemRandom().randrange(2**31)


def get(db: Database, entity: str, log_id: int) -> AuditRecall:
    return _recall(db, entity, log_id)


def judge(db: Database, entity: str, judgment: JudgmentIn, face: str) -> Judgment:
    """Judge one item of one logged recall (judging it again replaces the judgment)."""
    row = _row(db, entity, judgment.log_id)
    items = json.loads(row["items"])
    if judgment.rank > len(items):
        raise NotFound(
            f"no item at rank {judgment.rank}: recall {judgment.log_id} surfaced"
            f" {len(items)} items",
            field="rank",
        )
    item = items[judgment.rank - 1]
    key = item_key(item.get("source") or {})
    by = (judgment.by or "").strip() or face
    now = timestamps.now()
    who = (by, now)
    with db.write() as conn:
        conn.execute(
            "INSERT INTO audit_judgments (entity, log_id, item_key, rank, layer, relevant,"
            " judged_by, judged_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (log_id, item_key) DO UPDATE SET relevant = excluded.relevant,"
            " rank = excluded.rank, judged_by = excluded.judged_by,"
            " judged_at = excluded.judged_at",
            (entity, judgment.log_id, key, judgment.rank, item["layer"], judgment.relevant, *who),
        )
    return Judgment(
        log_id=judgment.log_id,
        rank=judgment.rank,
        layer=item["layer"],
        item_key=key,
        relevant=judgment.relevant,
        judged_by=by,
        judged_at=now,
    )


def precision(db: Database, entity: str, ask: PrecisionQuery) -> Precision:
    """precision@k over the judged recalls: per recall, the relevant share of its judged
    items among its top k (unjudged items count for neither), then the mean over recalls;
    per layer the same over each layer's own top k; and by ISO week of the recall."""
    k = ask.k
    judged = defaultdict(list)  # log_id -> [(rank, layer, relevant)]
    when: dict[int, str] = {}
    for row in db.conn.execute(
        "SELECT j.log_id, j.rank, j.layer, j.relevant, l.created_at FROM audit_judgments j"
        " JOIN recall_log l ON l.id = j.log_id WHERE j.entity = ? AND l.entity = ?"
        " ORDER BY j.log_id, j.rank",
        (entity, entity),
    ):
        judged[row["log_id"]].append((row["rank"], row["layer"], bool(row["relevant"])))
        when[row["log_id"]] = row["created_at"]
    layer_ranks = _layer_ranks(db, entity, list(judged))
    overall: list[tuple[int, int]] = []
    by_layer: dict[str, list[tuple[int, int]]] = defaultdict(list)
    by_week: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for log_id, marks in judged.items():
        top = [relevant for rank, _, relevant in marks if rank <= k]
        if top:
            overall.append((sum(top), len(top)))
            by_week[_week(when[log_id])].append((sum(top), len(top)))
        ranks_in_layer = layer_ranks.get(log_id, {})
        per_layer: dict[str, list[bool]] = defaultdict(list)
        for rank, layer, relevant in marks:
            if ranks_in_layer.get(rank, rank) <= k:
                per_layer[layer].append(relevant)
        for layer, marks_of_layer in per_layer.items():
            by_layer[layer].append((sum(marks_of_layer), len(marks_of_layer)))
    weeks = sorted(by_week)[-WEEKS_SHOWN:]
    return Precision(
        k=k,
        recalls=len(overall),
        judged=sum(n for _, n in overall),
        relevant=sum(r for r, _ in overall),
        precision=_mean(overall),
        layers=[
            LayerPrecision(
                layer=layer,
                recalls=len(pairs),
                judged=sum(n for _, n in pairs),
                relevant=sum(r for r, _ in pairs),
                precision=_mean(pairs),
            )
            for layer, pairs in sorted(by_layer.items())
        ],
        weeks=[
            WeekPrecision(
                week=week,
                recalls=len(by_week[week]),
                judged=sum(n for _, n in by_week[week]),
                precision=_mean(by_week[week]),
            )
            for week in weeks
        ],
    )


def export(db: Database, entity: str) -> Iterator[dict[str, Any]]:
    """The evaluation set: one record per judged recall, its context and its judged items
    (their identity, source, layer, rank then, and relevance), oldest first."""
    ids = [
        row["log_id"]
        for row in db.conn.execute(
            "SELECT DISTINCT log_id FROM audit_judgments WHERE entity = ? ORDER BY log_id",
            (entity,),
        )
    ]
    for log_id in ids:
        recall = _recall(db, entity, log_id)
        yield {
            "log_id": recall.id,
            "entity": entity,
            "context": recall.context,
            "channel": recall.channel,
            "created_at": recall.created_at,
            "items": [
                {
                    "key": item.key,
                    "rank": item.rank,
                    "layer": item.layer,
                    "score": item.score,
                    "source": item.source,
                    "text": item.text,
                    "relevant": item.relevant,
                }
                for item in recall.items
                if item.relevant is not None
            ],
        }


def precision_at(keys: list[str], relevance: dict[str, bool], k: int) -> tuple[float | None, int]:
    """One ranking's precision@k against judgments by item key: the relevant share of
    its judged items among the top k (None when none is judged), and how many were."""
    marks = [relevance[key] for key in keys[:k] if key in relevance]
    return (sum(marks) / len(marks) if marks else None), len(marks)


# --- helpers ---


def _row(db: Database, entity: str, log_id: int):
    row = db.conn.execute(
        "SELECT * FROM recall_log WHERE id = ? AND entity = ?", (log_id, entity)
    ).fetchone()
    if row is None:
        raise NotFound(f"no logged recall {log_id}")
    return row


def _recall(db: Database, entity: str, log_id: int) -> AuditRecall:
    row = _row(db, entity, log_id)
    marks = {
        r["item_key"]: bool(r["relevant"])
        for r in db.conn.execute(
            "SELECT item_key, relevant FROM audit_judgments WHERE log_id = ? AND entity = ?",
            (log_id, entity),
        )
    }
    items = []
    for rank, item in enumerate(json.loads(row["items"]), start=1):
        source = item.get("source") or {}
        key = item_key(source)
        items.append(
            AuditItem(
                rank=rank,
                layer=item["layer"],
                score=item["score"],
                key=key,
                source=source,
                text=item.get("text") or _text(db, entity, source),
                relevant=marks.get(key),
            )
        )
    return AuditRecall(
        id=row["id"],
        context=row["context"],
        channel=row["channel"],
        created_at=row["created_at"],
        items=items,
    )


def _text(db: Database, entity: str, source: dict[str, Any]) -> str | None:
    """What an item logged before the log kept texts said: an event's, from the store."""
    if not source.get("event_uid"):
        return None
    try:
        event = capture.get_event(db, entity, event_uid=source["event_uid"])
    except NotFound:
        return None
    return event.content


def _fully_judged(db: Database, entity: str) -> set[int]:
    done = set()
    counts = {
        row["log_id"]: row["n"]
        for row in db.conn.execute(
            "SELECT log_id, COUNT(*) AS n FROM audit_judgments WHERE entity = ? GROUP BY log_id",
            (entity,),
        )
    }
    for log_id, n in counts.items():
        row = db.conn.execute("SELECT items FROM recall_log WHERE id = ?", (log_id,)).fetchone()
        keys = {item_key(i.get("source") or {}) for i in json.loads(row["items"])} if row else set()
        if n >= len(keys):
            done.add(log_id)
    return done


def _layer_ranks(db: Database, entity: str, log_ids: list[int]) -> dict[int, dict[int, int]]:
    """Per recall: each item's rank among its own layer's items (rank -> rank in layer)."""
    ranks: dict[int, dict[int, int]] = {}
    for log_id in log_ids:
        row = db.conn.execute(
            "SELECT items FROM recall_log WHERE id = ? AND entity = ?", (log_id, entity)
        ).fetchone()
        seen: dict[str, int] = defaultdict(int)
        mapping = {}
        for rank, item in enumerate(json.loads(row["items"]) if row else [], start=1):
            seen[item["layer"]] += 1
            mapping[rank] = seen[item["layer"]]
        ranks[log_id] = mapping
    return ranks


def _week(created_at: str) -> str:
    year, week, _ = timestamps.parse(created_at).isocalendar()
    return f"{year}-W{week:02d}"


def _mean(pairs: list[tuple[int, int]]) -> float | None:
    shares = [r / n for r, n in pairs if n]
    return round(sum(shares) / len(shares), 4) if shares else None


# Asked by faces: `pps audit export` with no --entity exports every judging entity.
def judged_entities(db: Database) -> list[str]:
    """The entities with at least one judgment, by name."""
    rows = db.conn.execute("SELECT DISTINCT entity FROM audit_judgments ORDER BY entity")
    return [row["entity"] for row in rows]


# Asked by phone:
class JudgmentRef(Request):
    log_id: int = Field(ge=1, le=INT64_MAX, description="The logged recall.")
    rank: int = Field(ge=1, le=10_000, description="The item's place in that recall, 1 first.")


def unjudge(db: Database, entity: str, ref: JudgmentRef) -> bool:
    """Take back the judgment of one item of one logged recall (the audit page's undo):
    the item is unjudged again and leaves precision. False when it was not judged."""
    row = _row(db, entity, ref.log_id)
    items = json.loads(row["items"])
    if ref.rank > len(items):
        raise NotFound(
            f"no item at rank {ref.rank}: recall {ref.log_id} surfaced {len(items)} items",
            field="rank",
        )
    key = item_key(items[ref.rank - 1].get("source") or {})
    with db.write() as conn:
        gone = conn.execute(
            "DELETE FROM audit_judgments WHERE entity = ? AND log_id = ? AND item_key = ?",
            (entity, ref.log_id, key),
        ).rowcount
    return gone > 0
