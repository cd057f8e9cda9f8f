"""Score today's ambient recall against the retrieval audit's judgments.

Run: .venv/bin/python bench/audit_score.py EVAL.jsonl --data-dir D [--k 1,3,5] [--entity NAME]

EVAL.jsonl is what `pps audit export` writes: one judged recall a line, its context and
its judged items (identity, source, relevance). Each context is replayed through the
current ambient_recall on the data dir D (stop `pps serve` on it first: the data dir's
lock is taken) and the ranking is scored by item identity: precision@k is the relevant
share of the judged items among its top k (an item nobody judged counts for neither; the
judged share says how much of the top k the judgments cover). The same figures for the
logged ranking (the recall as it was when judged) come beside them, and then each
entity's used share on D: of the recalled items a reply came after, how many it used
(engine.recall.used), overall, per layer and per ISO week. Figures only.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: bench/ingest.py must not shadow `ingest`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import json
import statistics

from engine.kernel.config import Settings
from engine.kernel.lock import SERVE, DataDirLock
from engine.recall import audit, used
from engine.recall.ambient import recall
from engine.recall.shapes import RecallRequest
from engine.runtime import Runtime
from engine.store.db import Database


def load(path: Path, entity: str | None) -> list[dict]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [r for r in records if entity is None or r["entity"] == entity]


def score(records: list[dict], rankings: list[list[str]], ks: list[int]) -> dict[int, dict]:
    """Per k: mean precision@k over the recalls with a judged item in their top k, how
    many such recalls, and the judged share of the top k."""
    figures = {}
    for k in ks:
        precisions, covered = [], []
        for record, keys in zip(records, rankings, strict=True):
            relevance = {item["key"]: item["relevant"] for item in record["items"]}
            p, judged = audit.precision_at(keys, relevance, k)
            if p is not None:
                precisions.append(p)
            if keys[:k]:
                covered.append(judged / len(keys[:k]))
        figures[k] = {
            "precision": statistics.fmean(precisions) if precisions else None,
            "recalls": len(precisions),
            "judged_share": statistics.fmean(covered) if covered else None,
        }
    return figures


def replay(data_dir: Path, records: list[dict], per_layer: int, **settings_given):
    """Each record's context through today's ambient_recall: its items' identities, best
    first (the settings from the environment, `settings_given` on top)."""
    settings = Settings(data_dir=data_dir, **{"recall_log": False, **settings_given})
    lock = DataDirLock.acquire(settings.data_dir, SERVE, host=settings.host, port=settings.port)
    db = Database.open(settings)
    runtime = Runtime(settings, db)
    runtime.start()
    runtime.wait_loaded()  # the models load after the start
    try:
        rankings = []
        for record in records:
            ask = RecallRequest(
                context=record["context"], channel=record["channel"], limit_per_layer=per_layer
            )
            answer = recall(runtime, record["entity"], ask)
            rankings.append([audit.item_key(item.source) for item in answer.items])
        return rankings
    finally:
        runtime.stop()
        db.close()
        lock.release()


def logged(records: list[dict]) -> list[list[str]]:
    """The ranking as the log had it (judged items at their ranks then)."""
    rankings = []
    for record in records:
        keys: list[str] = [""] * max((i["rank"] for i in record["items"]), default=0)
        for item in record["items"]:
            keys[item["rank"] - 1] = item["key"]
        rankings.append(keys)
    return rankings


def show(name: str, figures: dict[int, dict]) -> None:
    for k, f in figures.items():
        p = "n/a" if f["precision"] is None else f"{f['precision']:.3f}"
        share = "n/a" if f["judged_share"] is None else f"{f['judged_share']:.0%}"
        print(
            f"{name:8} precision@{k:<3} {p}  over {f['recalls']} recalls, judged {share} of top k"
        )


def used_shares(data_dir: Path, names: list[str], **settings_given) -> None:
    """Each entity's used share on the data dir, as GET /v1/audit/used answers it."""
    db = Database.open(Settings(data_dir=data_dir, **settings_given))
    try:
        for name in names:
            figures = used.share(db, name)
            print(f"used     {name}: {_pct(figures.share)} of {figures.marked} marked items")
            for layer in figures.layers:
                print(f"used       {layer.layer:12} {_pct(layer.share)} of {layer.marked}")
            for week in figures.weeks:
                print(f"used       {week.week:12} {_pct(week.share)} of {week.marked}")
    finally:
        db.close()


def _pct(share: float | None) -> str:
    return "n/a" if share is None else f"{share:.0%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("eval_set", type=Path)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--k", default="1,3,5,10")
    parser.add_argument("--entity")
    parser.add_argument("--per-layer", type=int, default=5)
    args = parser.parse_args()
    ks = [int(k) for k in args.k.split(",")]
    records = load(args.eval_set, args.entity)
    if not records:
        sys.exit("no judged recalls in the evaluation set")
    print(f"{len(records)} judged recalls, {sum(len(r['items']) for r in records)} judged items")
    show("logged", score(records, logged(records), ks))
    show("replay", score(records, replay(args.data_dir, records, args.per_layer), ks))
    used_shares(args.data_dir, sorted({r["entity"] for r in records}))


if __name__ == "__main__":
    main()
