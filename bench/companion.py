"""Companion retrieval benchmark: a household companion's memory, made by a script, and
questions asked in other words than the answers.

Run: .venv/bin/python bench/companion.py [--seed N] [--half A|B] [--compare]
                                         [--fusion weighted|rrf] [--misses N] [--dir D]
                                         [--overlap-only] [--locomo DIR] [--dump FILE]

LoCoMo (bench/locomo.py) is one kind of memory: long chats whose questions reuse the
answers' words. This is the other kind, shaped like the product's real use (see
bench/companion_corpus.py, which makes it): two entities of one household, each with
word-photos, Word Walker fragments, MEMORY.md and daily notes, and some 370 raw turns
over 13 sessions in three channels (terminal, discord, reflection) over five weeks. 35
question families per entity (70 questions): facts said once in a turn, word-photo
sections, fragments, memory files, questions with a date filter, identifiers (ticket
numbers, model names, codes), category and tag filters, and facts that changed (only
the newer statement counts). Every answer has distractors on its theme: turns of other
days, word-photos about the same people. Generated from a seed, with no network and no
LLM; written to a temp dir at run time.

Ingest goes through the code paths users hit: turns through capture.parse_events +
Capture.record (one request per session), files written into each entity's home and
indexed by the engine's Index (as `pps reindex` and the watcher do), vectors from the
bundled model in the server's own runtime; the questions wait until every chunk has
its vector. Each question then goes through the same search service as locomo.py
(tiers=all, its filters, limit 20), and, the filtered kinds aside (recall takes no
filters), through ambient_recall's engine function with its defaults (5 items a layer,
2,000 tokens), scored on the fused item order.

Printed: how much the questions give away (the share of a question's content words
found in its answer, and in the answer with what surrounds it, per kind), here and for
LoCoMo's questions; R@1/5/10 (a gold answer in the top k: the turn, or a chunk
overlapping the gold lines of the file) overall and per kind, for search and recall;
isolation leaks (a result from the other entity's memory), date-filter and
category/tag-filter violations, changed facts whose older statement ranks above the
newer, query latency p50/p95; with --compare, on the same ingest, the ranking without
the reranker, and without it the other fusion, dense alone and BM25 alone.
--half A or B scores one half of the families (alternately within each kind, both
entities' questions of a family in one half): choose on one half, report on the other.
--misses N prints the first N questions search missed at 10, with what came first.

Limits: the language is templated and written by one author, the set is small (70
questions, about 750 turns), the chatter repeats, and each answer is said exactly once;
a figure moves by 1/70 = 0.014 per question. It tells where ranking fails on meaning,
not what a user will see.

Figures with the defaults (seed 0; docs/retrieval-evaluation.md has them per kind):
search R@1/5/10 0.300 / 0.629 / 0.686 (turns 0.000 / 0.500 / 0.500), recall 0.196 /
0.446 / 0.589; no isolation leak, no result outside a filter; the older statement above
the newer for 8 of 8 changed facts. A question shares 0.119 of its content words with its
answer here, 0.324 in LoCoMo.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: bench/ingest.py must not shadow `ingest`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import re
import statistics
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from bench.companion_corpus import (
    KINDS,
    Corpus,
    EntityCorpus,
    Gold,
    Question,
    generate,
    overlap,
    surroundings,
)
from bench.locomo import percentile, rankings, reranked
from engine.capture import entities
from engine.capture import events as capture
from engine.kernel.config import Settings
from engine.recall import ambient
from engine.recall.shapes import RecallRequest
from engine.runtime import Runtime
from engine.search import hybrid as search
from engine.search.hybrid import MAX_LIMIT, SearchRequest
from engine.search.index import Index
from engine.store.db import Database

LOCOMO = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo10"
KS = (1, 5, 10)
LIMIT = 20
UNFILTERED = tuple(k for k in KINDS if k not in ("date-filtered", "filtered"))
"""The kinds recall is scored on: it takes no date, category or tags."""
console = Console(width=140)


@dataclass
class Score:
    question: Question
    rank: int | None  # of the first gold answer, 0-based; None: not in what came back
    latency_ms: float
    leaks: int = 0  # results from the other entity's memory
    off_date: int = 0  # results outside the date window asked
    off_filter: int = 0  # results outside the category or tags asked
    stale_first: bool = False  # an older statement ranked above the newer one
    top: list[str] = field(default_factory=list)  # the first results, for --misses
    reranked: str | None = None  # "n of m": candidates the reranker read in its budget


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--half", choices=("A", "B"), default=None, help="one half of the set")
    parser.add_argument("--fusion", choices=("weighted", "rrf"), default=None)
    parser.add_argument(
        "--compare", action="store_true", help="also without the reranker, RRF, dense, BM25 alone"
    )
    parser.add_argument("--misses", type=int, default=3, help="misses to print (search, @10)")
    parser.add_argument("--dir", type=Path, default=None, help="data dir (default: a temp dir)")
    parser.add_argument("--overlap-only", action="store_true", help="no ingest, no scores")
    parser.add_argument("--locomo", type=Path, default=LOCOMO, help="LoCoMo data, for contrast")
    parser.add_argument("--dump", type=Path, default=None, help="write the corpus as JSON")
    args = parser.parse_args()

    corpus = generate(args.seed)
    if args.dump:
        args.dump.write_text(corpus.to_json())
    questions = [q for q in corpus.questions if args.half in (None, q.half)]
    describe(corpus, questions, args.half)
    overlaps(corpus, questions, args.locomo)
    if args.overlap_only:
        return

    workdir = args.dir or Path(tempfile.mkdtemp(prefix="pps-companion-"))
    overrides = {"search_fusion": args.fusion} if args.fusion else {}
    settings = Settings(data_dir=workdir / "data", graph_backend="none", **overrides)
    db = Database.open(settings)
    runtime = Runtime(settings, db)
    runtime.start()
    runtime.wait_loaded()  # the models load after the start
    try:
        ingest(runtime, corpus)
        configs = rankings(settings, args.fusion, args.compare)
        summary = []
        for name, config in configs:
            index = runtime.index if config is settings else Index(config, db)
            scores, fallback = ask(index, corpus, questions)
            summary.append((name, config, scores, fallback))
            if config is settings:
                recalled = ask_recall(runtime, corpus, questions)
                report(name, settings, scores, recalled)
                misses(scores, args.misses)
                unanswered(runtime, corpus)
        if args.compare:
            compare(summary)
    finally:
        runtime.stop()
        db.close()


# --- the set -----------------------------------------------------------------------


def describe(corpus: Corpus, questions: list[Question], half: str | None) -> None:
    for entity in corpus.entities:
        turns = sum(len(s.turns) for s in entity.sessions)
        channels = sorted({s.channel for s in entity.sessions})
        kinds = defaultdict(int)
        for path in entity.files:
            kinds[path.split("/")[0]] += 1
        console.print(
            f"{entity.name}: {turns} turns in {len(entity.sessions)} sessions"
            f" ({', '.join(channels)}), {entity.sessions[0].day} to {entity.sessions[-1].day};"
            f" files: {dict(kinds)}"
        )
    console.print(
        f"seed {corpus.seed}: {len(questions)} questions"
        + (f" (half {half} of {len(corpus.questions)})" if half else "")
    )


def overlaps(corpus: Corpus, questions: list[Question], locomo_dir: Path) -> None:
    """How much a question gives away: the share of its content words in its answer."""
    table = Table(title="Question words found in the answer (mean share of content words)")
    for column in ("set / kind", "questions", "in the answer", "in the answer and around it"):
        table.add_column(column, justify="left" if column == "set / kind" else "right")
    rows = defaultdict(list)
    for q in questions:
        share = overlap(q.text, [g.text for g in q.gold])
        around = overlap(q.text, [g.text for g in q.gold] + surroundings(corpus, q))
        rows[q.kind].append((share, around))
        rows["overall"].append((share, around))
    for kind in ("overall", *KINDS):
        if rows[kind]:
            table.add_row(f"companion: {kind}", *_overlap_cells(rows[kind]))
    for label, values in _locomo_overlaps(locomo_dir).items():
        table.add_row(f"LoCoMo: {label}", *_overlap_cells(values))
    console.print(table)


def _overlap_cells(values: list[tuple[float, float]]) -> list[str]:
    return [
        str(len(values)),
        f"{statistics.mean(v[0] for v in values):.3f}",
        f"{statistics.mean(v[1] for v in values):.3f}",
    ]


def _locomo_overlaps(data: Path) -> dict[str, list[tuple[float, float]]]:
    """The same measure on LoCoMo's questions of categories 1-4 (turns with ±2 turns of
    their session around them), when its data is there."""
    from bench.locomo import CATEGORIES, load

    files = sorted(data.glob("*.json")) if data.is_dir() else []
    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for path in files:
        conv = load(path, captions=True)
        turns = {t["id"]: (s, i) for s in conv["sessions"] for i, t in enumerate(s["turns"])}
        for qa in conv["questions"]:
            found = [turns[e] for e in sorted(qa["evidence"]) if e in turns]
            if not found:
                continue
            answer = [s["turns"][i]["text"] for s, i in found]
            around = [
                f"{t['speaker']}: {t['text']}"
                for s, i in found
                for t in s["turns"][max(0, i - 2) : i + 3]
            ]
            value = (overlap(qa["q"], answer), overlap(qa["q"], answer + around))
            rows["overall"].append(value)
            rows[f"{qa['category']} {CATEGORIES[qa['category']]}"].append(value)
    return dict(sorted(rows.items(), key=lambda item: item[0] != "overall"))


# --- ingest ------------------------------------------------------------------------


def ingest(runtime: Runtime, corpus: Corpus) -> None:
    db, settings, index = runtime.db, runtime.settings, runtime.index
    started = time.perf_counter()
    turns = files = 0
    for entity in corpus.entities:
        entities.create(db, entity.name)
        home = index.home(entity.name)
        for relative, text in entity.files.items():  # as a person or an agent writes them
            path = home.path(relative)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        report = index.sync_entity(entity.name)
        if report.errors or report.skipped:
            raise SystemExit(f"files not indexed: {report.errors or report.skipped}")
        files += len(entity.files)
        for session in entity.sessions:
            payload = [
                {
                    "event_uid": turn.uid,
                    "channel": session.channel,
                    "author": turn.author,
                    "role": turn.role,
                    "content": turn.content,
                    "session_id": session.id,
                    "created_at": turn.created_at,
                }
                for turn in session.turns
            ]
            events = capture.parse_events(
                payload, max_batch=settings.max_batch, max_content_bytes=settings.max_content_bytes
            )
            runtime.capture.record(entity.name, events)
            turns += len(events)
    captured = time.perf_counter()
    names = [e.name for e in corpus.entities]
    while True:  # the embed_events jobs run in the runtime's workers
        missing = db.conn.execute(
            "SELECT COUNT(*) FROM search_chunks c LEFT JOIN search_vectors v"
            " ON v.chunk_id = c.id AND v.model = ? WHERE v.chunk_id IS NULL"
            f" AND c.entity IN ({','.join('?' * len(names))})",
            (settings.embedding_model, *names),
        ).fetchone()[0]
        if not missing:
            break
        waiting = db.conn.execute("SELECT reason FROM queue_pauses").fetchone()
        if waiting:
            raise SystemExit(f"embedding jobs wait: {waiting[0]}")
        time.sleep(0.5)
    console.print(
        f"ingested {files} files and {turns} turns in {captured - started:.1f} s, every"
        f" vector ready {time.perf_counter() - captured:.1f} s later"
    )


# --- asking --------------------------------------------------------------------------


def ask(index: Index, corpus: Corpus, questions: list[Question]):
    """Each question through the search service, tiers=all, with its filters."""
    scores, fallback = [], None
    for q in questions:
        request = SearchRequest(query=q.text, limit=LIMIT, **q.filters)
        started = time.perf_counter()
        response = search.search(index, q.entity, request)
        latency = (time.perf_counter() - started) * 1000
        fallback = response.fallback
        results = response.results
        refs = [(r.event_uid, r.path, r.start_line, r.end_line) for r in results]
        own = _entity(corpus, q.entity)
        score = Score(q, _rank(refs, q.gold), latency, reranked=response.reranked)
        score.leaks = sum(not _own(own, r.event_uid, r.path, r.text) for r in results)
        score.off_date = sum(_off_date(q.filters, r.date) for r in results)
        score.off_filter = sum(_off_filter(q.filters, r) for r in results)
        stale = _rank(refs, q.stale)
        score.stale_first = stale is not None and stale < (
            LIMIT if score.rank is None else score.rank
        )
        score.top = [_shown(r.event_uid or f"{r.path}:{r.start_line}", r.text) for r in results]
        scores.append(score)
    return scores, fallback


def ask_recall(runtime: Runtime, corpus: Corpus, questions: list[Question]) -> list[Score]:
    """Each question of the unfiltered kinds as ambient_recall's context, its defaults."""
    scores = []
    for q in questions:
        if q.kind not in UNFILTERED:
            continue
        started = time.perf_counter()
        found = ambient.recall(runtime, q.entity, RecallRequest(context=q.text))
        latency = (time.perf_counter() - started) * 1000
        sources = [item.source for item in found.items]
        refs = [
            (s.get("event_uid"), s.get("path"), s.get("start_line"), s.get("end_line"))
            for s in sources
        ]
        own = _entity(corpus, q.entity)
        score = Score(q, _rank(refs, q.gold), latency)
        score.leaks = sum(
            not _own(own, s.get("event_uid"), s.get("path"), item.text)
            for s, item in zip(sources, found.items, strict=True)
            if s.get("event_uid") or s.get("path")
        )
        scores.append(score)
    return scores


NOT_IN_MEMORY = (
    ("what is my bank PIN?", "bank"),
    ("when does my passport expire?", "passport"),
    ("which insurance company covers the car?", "insurance"),
    ("what size are my ski boots?", "boots"),
    ("what's my blood type?", "blood"),
    ("which train did I take to Vienna?", "vienna"),
    ("what flavour was the wedding cake?", "wedding"),
    ("who won the chess tournament?", "chess"),
    ("what's the registration plate of the van?", "registration"),
    ("what did the optician say about my eyes?", "optician"),
    ("when did I last renew the TV licence?", "licence"),
    ("what was the score of the rugby match?", "rugby"),
    ("how much is the mortgage payment each month?", "mortgage"),
    ("when is the vet appointment for the parrot?", "parrot"),
)
"""Questions whose answer is in neither entity's memory: its topic's word is in no turn
and no file of the set (checked when run)."""


def unanswered(runtime: Runtime, corpus: Corpus) -> None:
    """Each NOT_IN_MEMORY question as each entity's recall context: how many turns and
    file excerpts it injects (there is nothing to find), and how often none."""
    said = corpus.to_json().lower()
    if found := [word for _, word in NOT_IN_MEMORY if re.search(rf"\b{word}\b", said)]:
        raise SystemExit(f"the set speaks of {', '.join(found)}: not a question without answer")
    injected = []
    for entity in corpus.entities:
        for text, _ in NOT_IN_MEMORY:
            found = ambient.recall(runtime, entity.name, RecallRequest(context=text))
            injected.append(sum(i.layer in ("turns", "anchors") for i in found.items))
    console.print(
        f"{len(injected)} recalls of questions nothing in memory answers: turns and"
        f" file excerpts injected, mean {statistics.mean(injected):.1f}, most"
        f" {max(injected)}; none injected for {injected.count(0) / len(injected):.3f}"
    )


def _rank(refs: list[tuple], golds: list[Gold]) -> int | None:
    for rank, (uid, path, start, end) in enumerate(refs):
        for gold in golds:
            if gold.uid is not None and uid == gold.uid:
                return rank
            if (
                gold.path is not None
                and path == gold.path
                and start is not None
                and start <= gold.end
                and end >= gold.start
            ):
                return rank
    return None


def _entity(corpus: Corpus, name: str) -> EntityCorpus:
    return next(e for e in corpus.entities if e.name == name)


def _own(entity: EntityCorpus, uid: str | None, path: str | None, text: str) -> bool:
    """Whether a result is of this entity's memory: one of its turns, or text of its file."""
    if uid is not None:
        return any(uid == t.uid for s in entity.sessions for t in s.turns)
    return path in entity.files and text.strip() in entity.files[path]


def _off_date(filters: dict, day: str | None) -> bool:
    """Whether a result's day is outside the question's date or window."""
    low = filters.get("date") or filters.get("since")
    high = filters.get("date") or filters.get("until")
    if (low or high) and day is None:
        return True
    return bool(low and day < low) or bool(high and day > high)


def _off_filter(filters: dict, result: search.SearchResult) -> bool:
    """Whether a result is outside the question's category or tags."""
    if "category" in filters and result.category != filters["category"]:
        return True
    return "tags" in filters and not set(filters["tags"]) & set(result.tags)


def _shown(ref: str, text: str, chars: int = 90) -> str:
    flat = " ".join(text.split())
    return f"{ref}: {flat[:chars]}{'…' if len(flat) > chars else ''}"


# --- reporting -----------------------------------------------------------------------


def recall_at(scores: list[Score], k: int, kind: str | None = None) -> float:
    hits = [s.rank is not None and s.rank < k for s in scores if kind in (None, s.question.kind)]
    return sum(hits) / len(hits) if hits else float("nan")


def report(name: str, settings: Settings, scores: list[Score], recalled: list[Score]) -> None:
    fusion = settings.search_fusion
    if fusion == "weighted":
        fusion += f", BM25 weight {settings.search_bm25_weight}"
    table = Table(title=f"Companion retrieval, {len(scores)} questions, {name} ({fusion})")
    table.add_column("kind")
    table.add_column("n", justify="right")
    for k in KS:
        table.add_column(f"search R@{k}", justify="right")
    table.add_column("recall n", justify="right")
    for k in KS:
        table.add_column(f"recall R@{k}", justify="right")
    for kind in (None, *KINDS):
        n = sum(kind in (None, s.question.kind) for s in scores)
        if not n:
            continue
        m = sum(kind in (None, s.question.kind) for s in recalled)
        table.add_row(
            kind or "overall",
            str(n),
            *(f"{recall_at(scores, k, kind):.3f}" for k in KS),
            str(m) if m else "-",
            *((f"{recall_at(recalled, k, kind):.3f}" for k in KS) if m else ("-",) * len(KS)),
        )
    console.print(table)
    asked = {s.question.id for s in recalled}
    same = [s for s in scores if s.question.id in asked]
    console.print(
        f"ambient path: the gold among a recall's items for"
        f" {recall_at(recalled, MAX_LIMIT):.3f} of {len(recalled)} questions (search R@5 on"
        f" the same questions {recall_at(same, 5):.3f}, R@10 {recall_at(same, 10):.3f})"
    )
    dated = [s for s in scores if {"date", "since", "until"} & s.question.filters.keys()]
    narrowed = [s for s in scores if {"category", "tags"} & s.question.filters.keys()]
    changed = [s for s in scores if s.question.stale]
    console.print(
        f"isolation leaks: {sum(s.leaks for s in scores)} in search results,"
        f" {sum(s.leaks for s in recalled)} in recall items; results outside the date"
        f" asked: {sum(s.off_date for s in dated)} (of {len(dated)} questions), outside the"
        f" category or tags asked: {sum(s.off_filter for s in narrowed)} (of"
        f" {len(narrowed)}); changed facts with the older statement above the newer:"
        f" {sum(s.stale_first for s in changed)} of {len(changed)}"
    )
    if said := reranked([s.reranked for s in scores]):
        console.print(
            f"the reranker read {said} candidates in its budget"
            f" ({settings.search_rerank_budget_ms:g} ms a search)"
        )
    for label, found in (("search", scores), ("recall", recalled)):
        latencies = [s.latency_ms for s in found]
        console.print(
            f"{label} latency: p50 {percentile(latencies, 50):.1f} ms,"
            f" p95 {percentile(latencies, 95):.1f} ms"
        )


def misses(scores: list[Score], count: int) -> None:
    missed = [s for s in scores if s.rank is None or s.rank >= 10]
    console.print(f"missed at 10: {len(missed)}")
    for s in missed[:count]:
        q = s.question
        console.print(f"[bold]{q.id}[/bold] ({q.kind}) {q.text} {q.filters or ''}")
        console.print(f"  answer (rank {'-' if s.rank is None else s.rank + 1}): ", end="")
        console.print(_shown(q.gold[0].uid or q.gold[0].path, q.gold[0].text, 120), markup=False)
        for line in s.top[:3]:
            console.print(f"  came first: {line}", markup=False)


def compare(summary) -> None:
    table = Table(title="Fusion compared on the same ingest (search)")
    for column in ("ranking", "R@1", "R@5", "R@10", "turn R@10", "word-photo R@10"):
        table.add_column(column, justify="left" if column == "ranking" else "right")
    table.add_column("p50 / p95 ms", justify="right")
    for name, config, scores, fallback in summary:
        label = name if not fallback else f"{name} (fallback {fallback})"
        if name in ("default", "weighted", "rrf"):
            label += f" ({config.search_fusion})"
        latencies = [s.latency_ms for s in scores]
        table.add_row(
            label,
            *(f"{recall_at(scores, k):.3f}" for k in KS),
            f"{recall_at(scores, 10, 'turn'):.3f}",
            f"{recall_at(scores, 10, 'word-photo'):.3f}",
            f"{percentile(latencies, 50):.1f} / {percentile(latencies, 95):.1f}",
        )
    console.print(table)


if __name__ == "__main__":
    main()
