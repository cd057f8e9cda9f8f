"""LoCoMo retrieval benchmark: how well search finds the turns that answer a question.

Run: .venv/bin/python bench/locomo.py [--data DIR] [--conversations N] [--compare]
                                      [--no-captions] [--fusion weighted|rrf] [--recall]

Each of the 10 LoCoMo conversations becomes one entity. Every turn is captured as an
event through the code path users hit (capture.parse_events + Capture.record, one
request per session): the session's date as created_at, the speaker as author, the
session as session_id. A turn that shares a photo carries the photo's caption, as a chat
adapter would send alt text. The embed_events jobs run in the server's own runtime, and
the questions wait until every turn has its vector. Then every question of categories
1-4 goes through the same search service (tiers=longform) with default settings.

Printed: recall_any@k (some evidence turn in the top k) and recall_all@k (all of them),
k = 1, 5, 10, 20, overall and per category, at turn level and at session level (sessions
ranked by their best turn, as published figures count), query latency p50/p95 (embedding
included), and ingest time. --compare also runs, on the same ingest, the ranking
without the reranker, and without it the other fusion, dense alone and BM25 alone.
--recall also asks every question as the context of ambient_recall (the path a hook
takes on every prompt: its defaults, every layer) and prints the share of questions
with an evidence turn among the recall's items, next to search's any@5 and any@10, with
the items a recall kept and its latency; and each question asked of another
conversation's entity (memory that does not hold its answer): how many turns and
word-photos such a recall injects, and how often none.
Nothing here is tuned on the questions.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: bench/ingest.py must not shadow `ingest`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import json
import re
import statistics
import tempfile
import time
from collections import defaultdict
from datetime import datetime

from rich.console import Console
from rich.table import Table

from engine.capture import entities
from engine.capture import events as capture
from engine.kernel.config import Settings
from engine.recall import ambient
from engine.recall.shapes import RecallRequest
from engine.runtime import CAPTURE_LISTENERS, Runtime
from engine.search import hybrid as search
from engine.search.hybrid import SearchRequest
from engine.search.index import Index
from engine.store.db import Database

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo10"
KS = (1, 5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
console = Console(width=140)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", type=int, default=None, help="only the first N")
    parser.add_argument("--fusion", choices=("weighted", "rrf"), default=None)
    parser.add_argument(
        "--compare", action="store_true", help="also without the reranker, RRF, dense, BM25 alone"
    )
    parser.add_argument("--no-captions", action="store_true", help="leave photo captions out")
    parser.add_argument("--dir", type=Path, default=None, help="data dir (default: a temp dir)")
    parser.add_argument("--recall", action="store_true", help="also ask through ambient_recall")
    args = parser.parse_args()

    files = sorted(args.data.glob("*.json"))[: args.conversations]
    if not files:
        raise SystemExit(f"no LoCoMo conversations in {args.data}")
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="pps-locomo-"))
    overrides = {"search_fusion": args.fusion} if args.fusion else {}
    settings = Settings(data_dir=workdir / "data", graph_backend="none", **overrides)
    db = Database.open(settings)
    runtime = Runtime(settings, db)
    runtime.start()
    runtime.wait_loaded()  # the models load after the start
    try:
        conversations = [load(path, captions=not args.no_captions) for path in files]
        ingest_s, embed_s, turns = ingest(db, settings, conversations)
        console.print(
            f"ingested {turns} turns of {len(conversations)} conversations: capture "
            f"{ingest_s:.1f} s ({turns / ingest_s:.0f} turns/s), vectors ready after "
            f"{embed_s:.1f} s more ({turns / embed_s:.0f} turns/s)"
        )
        configs = rankings(settings, args.fusion, args.compare)
        summary = []
        for name, config in configs:
            index = runtime.index if config is settings else Index(config, db)
            scores, latencies, fallback, said = ask(index, conversations)
            if config is settings:
                report(name, settings, scores, latencies)
                if read := reranked(said):
                    console.print(
                        f"the reranker read {read} candidates in its budget"
                        f" ({settings.search_rerank_budget_ms:g} ms a search)"
                    )
            summary.append((name, config, scores, latencies, fallback))
        if args.compare:
            compare(summary)
        if args.recall:
            ambient_path(runtime, conversations, summary[0][2])
    finally:
        runtime.stop()
        db.close()


def load(path: Path, captions: bool) -> dict:
    data = json.loads(path.read_text())
    conv = data.get("conversation", data)
    sessions = []
    n = 1
    while f"session_{n}" in conv:
        stamp = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        turns = []
        for turn in conv[f"session_{n}"]:
            text = turn["text"]
            if captions and turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            turns.append({"id": turn["dia_id"], "speaker": turn["speaker"], "text": text})
        sessions.append({"n": n, "created_at": stamp.isoformat() + "Z", "turns": turns})
        n += 1
    questions = []
    for qa in data["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = {
            part for item in qa.get("evidence", []) for part in re.findall(r"D\d+:\d+", str(item))
        }
        questions.append({"q": qa["question"], "category": qa["category"], "evidence": evidence})
    return {"name": f"locomo-{path.stem}", "sessions": sessions, "questions": questions}


def ingest(db: Database, settings: Settings, conversations: list[dict]) -> tuple[float, float, int]:
    turns = 0
    started = time.perf_counter()
    for conv in conversations:
        if not entities.exists(db, conv["name"]):  # --dir of an earlier run: its events stay
            entities.create(db, conv["name"])
        for session in conv["sessions"]:
            payload = [
                {
                    "event_uid": f"{conv['name']}-{turn['id']}",
                    "channel": "locomo",
                    "author": turn["speaker"],
                    "content": turn["text"],
                    "session_id": f"session-{session['n']}",
                    "created_at": session["created_at"],
                }
                for turn in session["turns"]
            ]
            events = capture.parse_events(
                payload,
                max_batch=settings.max_batch,
                max_content_bytes=settings.max_content_bytes,
            )
            capture.Capture(db, CAPTURE_LISTENERS).record(conv["name"], events)
            turns += len(events)
    captured = time.perf_counter()
    while True:  # the embed_events jobs run in the runtime's workers
        missing = db.conn.execute(
            "SELECT COUNT(*) FROM search_chunks c LEFT JOIN search_vectors v"
            " ON v.chunk_id = c.id AND v.model = ? WHERE c.tier = 'longform'"
            " AND v.chunk_id IS NULL",
            (settings.embedding_model,),
        ).fetchone()[0]
        if not missing:
            break
        waiting = db.conn.execute("SELECT reason FROM queue_pauses").fetchone()
        if waiting:
            raise SystemExit(f"embedding jobs wait: {waiting[0]}")
        time.sleep(0.5)
    return captured - started, time.perf_counter() - captured, turns


def ask(index: Index, conversations: list[dict]):
    """Per question: (category, evidence, ranked turn ids, ranked session numbers); the
    latencies, the fallback, and what each search says it reranked."""
    scores, latencies, fallback, said = [], [], None, []
    for conv in conversations:
        uid_prefix = conv["name"] + "-"
        known = {t["id"] for s in conv["sessions"] for t in s["turns"]}
        for qa in conv["questions"]:
            evidence = qa["evidence"] & known
            if not evidence:
                continue
            request = SearchRequest(query=qa["q"], tiers="longform", limit=100)
            started = time.perf_counter()
            response = search.search(index, conv["name"], request)
            latencies.append((time.perf_counter() - started) * 1000)
            fallback = response.fallback
            said.append(response.reranked)
            ranked = [r.event_uid.removeprefix(uid_prefix) for r in response.results]
            sessions = list(dict.fromkeys(_session(turn) for turn in ranked))
            scores.append((qa["category"], evidence, ranked, sessions))
    return scores, latencies, fallback, said


def reranked(said: list[str | None]) -> str | None:
    """The searches' `reranked` ("n of m") summed: what a budget let the reranker read."""
    pairs = [tuple(int(x) for x in s.split(" of ")) for s in said if s]
    return f"{sum(n for n, _ in pairs)} of {sum(m for _, m in pairs)}" if pairs else None


def recall(scores, level: str, mode: str, k: int, category: int | None = None) -> float:
    hits = []
    for cat, evidence, ranked, sessions in scores:
        if category is not None and cat != category:
            continue
        if level == "turn":
            wanted, got = evidence, set(ranked[:k])
        else:
            wanted, got = {_session(e) for e in evidence}, set(sessions[:k])
        hits.append(bool(wanted & got) if mode == "any" else wanted <= got)
    return sum(hits) / len(hits) if hits else float("nan")


def report(name: str, settings: Settings, scores, latencies) -> None:
    fusion = settings.search_fusion
    if fusion == "weighted":
        fusion += f", BM25 weight {settings.search_bm25_weight}"
    table = Table(title=f"LoCoMo retrieval, {len(scores)} questions (categories 1-4), {fusion}")
    table.add_column("level / subset")
    for mode in ("any", "all"):
        for k in KS:
            table.add_column(f"{mode}@{k}", justify="right")
    by_category = defaultdict(int)
    for cat, *_ in scores:
        by_category[cat] += 1
    for level in ("turn", "session"):
        subsets = [(f"{level}: overall", None)] + [
            (f"{level}: {c} {CATEGORIES[c]} ({by_category[c]})", c) for c in CATEGORIES
        ]
        for label, cat in subsets:
            row = [
                f"{recall(scores, level, mode, k, cat):.3f}" for mode in ("any", "all") for k in KS
            ]
            table.add_row(label, *row)
    console.print(table)
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    console.print(f"query latency: p50 {p50:.1f} ms, p95 {p95:.1f} ms")


def compare(summary) -> None:
    table = Table(title="Fusion compared on the same ingest (turn-level and session-level @10)")
    for column in ("ranking", "turn any@10", "turn all@10", "session any@10", "session all@10"):
        table.add_column(column, justify="right" if "@" in column else "left")
    table.add_column("p50 / p95 ms", justify="right")
    for name, config, scores, latencies, fallback in summary:
        label = name if not fallback else f"{name} (fallback {fallback})"
        if name in ("default", "weighted", "rrf"):
            label += f" ({config.search_fusion})"
        table.add_row(
            label,
            *(
                f"{recall(scores, level, mode, 10):.3f}"
                for level in ("turn", "session")
                for mode in ("any", "all")
            ),
            f"{percentile(latencies, 50):.1f} / {percentile(latencies, 95):.1f}",
        )
    console.print(table)


def ambient_path(runtime: Runtime, conversations: list[dict], searched) -> None:
    """Every question as ambient_recall's context: evidence among the items, against
    search's any@5 / any@10 on the same questions; then each asked of the next
    conversation's entity, which does not hold its answer."""
    hits, kept, latencies, strays, silent = [], [], [], [], 0
    for n, conv in enumerate(conversations):
        other = conversations[(n + 1) % len(conversations)]["name"]
        known = {t["id"] for s in conv["sessions"] for t in s["turns"]}
        for qa in conv["questions"]:
            evidence = qa["evidence"] & known
            if not evidence:
                continue
            started = time.perf_counter()
            found = ambient.recall(runtime, conv["name"], RecallRequest(context=qa["q"]))
            latencies.append((time.perf_counter() - started) * 1000)
            uids = {i.source.get("event_uid") for i in found.items}
            hits.append(any(f"{conv['name']}-{e}" in uids for e in evidence))
            kept.append(len(found.items))
            stray = ambient.recall(runtime, other, RecallRequest(context=qa["q"]))
            searched_layers = [i for i in stray.items if i.layer in ("turns", "anchors")]
            strays.append(len(searched_layers))
            silent += not searched_layers
    console.print(
        f"ambient path, {len(hits)} questions as recall contexts: evidence among the items"
        f" {sum(hits) / len(hits):.3f} (search any@5 {recall(searched, 'turn', 'any', 5):.3f},"
        f" any@10 {recall(searched, 'turn', 'any', 10):.3f}); items a recall kept: median"
        f" {statistics.median(kept):g}; latency p50 {percentile(latencies, 50):.1f} ms,"
        f" p95 {percentile(latencies, 95):.1f} ms"
    )
    console.print(
        f"asked of another conversation's entity: turns and word-photos injected, median"
        f" {statistics.median(strays):g}, mean {statistics.mean(strays):.1f};"
        f" none injected for {silent / len(strays):.3f} of the questions"
    )


def _session(dia_id: str) -> int:
    return int(dia_id[1:].split(":")[0])


def rankings(settings: Settings, fusion: str | None, compare: bool) -> list:
    """(name, settings) of the ranking asked for and, with --compare, of the others run on
    the same ingest: without the reranker, and without it the other fusion, dense alone,
    BM25 alone."""
    configs = [(fusion or "default", settings)]
    if compare:
        other = "rrf" if settings.search_fusion == "weighted" else "weighted"
        plain = settings.model_copy(update={"search_rerank": 0})
        configs += [
            ("without the reranker", plain),
            (f"{other}, no reranker", plain.model_copy(update={"search_fusion": other})),
            ("dense alone, no reranker", plain.model_copy(update={"search_bm25_weight": 0.0})),
            (
                "BM25 alone, no reranker",
                plain.model_copy(update={"embedding_model": "none/unloadable"}),
            ),
        ]
    return configs


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100)[q - 1]


if __name__ == "__main__":
    main()
