"""Search at scale: latency and resident memory at 1k, 10k, 100k and 1M chunks for one
entity.

Run: .venv/bin/python bench/search_scale.py [--max N] [--queries Q] [--dir D]

The corpus grows in place from one size to the next. Each row is a raw turn (an event
and its search row, inserted with SQL: ingest speed is bench/ingest.py's business),
its text drawn word by word from the LoCoMo conversations' own vocabulary with their
frequencies, so the keyword side sees realistic term statistics. Its vector is the real
embedding of a LoCoMo turn plus a little noise (cosine ~0.9 to it), so the vectors
cluster as real ones do (embedding a million texts here would take hours). The queries
are LoCoMo questions, each embedded by the real model through the real search service,
with default settings.

Printed per size: full search p50/p95 (the service call: query embedding, dense, BM25,
fusion, the reranker, result rows) as served (the approximate index past
PPS_SEARCH_ANN_MIN_ROWS) and exact, and as served without the reranker (as recall
searches); the dense part both ways; BM25; how many of the top-10 results are the exact
search's; the process's resident memory; the matrix load time and the approximate
index's build time. Goal: p95 under 50 ms at 100k. Figures only; nothing is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: bench/ingest.py must not shadow `ingest`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import json
import random
import re
import statistics
import tempfile
import time
from collections import Counter

import numpy as np
from rich.console import Console
from rich.table import Table

from engine.capture import entities
from engine.kernel.config import Settings
from engine.search import hybrid as search
from engine.search import turns, vectors
from engine.search.chunk_store import content_hash
from engine.search.hybrid import SearchRequest
from engine.search.index import Index
from engine.store.db import Database

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo10"
SIZES = (1_000, 10_000, 100_000, 1_000_000)
ENTITY = "scale"
console = Console(width=140)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max", type=int, default=1_000_000, help="largest size to reach")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()

    words, weights, questions, texts = corpus(args.data)
    rng = random.Random(7)
    questions = rng.sample(questions, min(args.queries, len(questions)))
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="pps-scale-"))
    settings = Settings(data_dir=workdir / "data", graph_backend="none")
    db = Database.open(settings)
    entities.create(db, ENTITY)
    index = Index(settings, db)
    embedder = index.embedder()

    turn_vectors = embedder.embed(texts)
    table = Table(title="Search latency and memory by corpus size (one entity)")
    for column in (
        "chunks",
        "search p50 / p95 ms",
        "exact search p50 / p95",
        "unreranked p50 / p95",
        "embed p50",
        "dense p50 / p95",
        "exact dense p50 / p95",
        "BM25 p50 / p95",
        "same top-10",
        "RSS MiB",
        "load s",
        "index build s",
    ):
        table.add_column(column, justify="right")
    have = 0
    for size in (s for s in SIZES if s <= args.max):
        started = time.perf_counter()
        grow(db, settings.embedding_model, have, size, words, weights, turn_vectors, rng)
        have = size
        console.print(f"{size:,} rows in {time.perf_counter() - started:.1f} s")
        loaded = time.perf_counter()
        matrix = index.matrix(ENTITY)
        load_s = time.perf_counter() - loaded
        built = time.perf_counter()
        approximate = matrix.wait_for_index()
        build_s = time.perf_counter() - built
        served = measure(index, matrix, embedder, questions)
        if approximate:  # the same queries again, exact
            held, matrix.ann, matrix.ann_min_rows = matrix.ann, None, 0
            exact = measure(index, matrix, embedder, questions)
            matrix.ann, matrix.ann_min_rows = held, settings.search_ann_min_rows
            same = statistics.mean(
                len(set(a) & set(b)) / max(1, len(b))
                for a, b in zip(served["top"], exact["top"], strict=True)
            )
        else:
            exact, same = served, 1.0
        table.add_row(
            f"{size:,}",
            spread(served["full"]),
            spread(exact["full"]) if approximate else "same",
            spread(served["plain"]),
            f"{pct(served['embed'], 50):.1f}",
            spread(served["dense"]),
            spread(exact["dense"]) if approximate else "same",
            spread(served["keyword"]),
            f"{same:.1%}",
            f"{rss_mib():.0f}",
            f"{load_s:.2f}",
            f"{build_s:.1f}" if approximate else "-",
        )
        console.print(table)
    db.close()


def measure(index, matrix, embedder, questions) -> dict[str, list]:
    """Each question through the search service, and its parts timed alone."""
    got: dict[str, list] = {
        "full": [],
        "plain": [],
        "embed": [],
        "dense": [],
        "keyword": [],
        "top": [],
    }
    for question in questions:
        request = SearchRequest(query=question, tiers="longform")
        t0 = time.perf_counter()
        found = search.search(index, ENTITY, request)
        got["full"].append(ms(t0))
        got["top"].append([r.event_uid for r in found.results])
        t0 = time.perf_counter()
        search.search(index, ENTITY, request, reranked=False)
        got["plain"].append(ms(t0))
        t0 = time.perf_counter()
        vector = embedder.embed_one(question)
        got["embed"].append(ms(t0))
        allowed = matrix.mask(request.tier_list, request.growth)
        t0 = time.perf_counter()
        matrix.nearest(vector, allowed, search.CANDIDATES)
        got["dense"].append(ms(t0))
        where, params, _ = search._where(ENTITY, request, None)
        t0 = time.perf_counter()
        search._keyword(index, ENTITY, request.tier_list, question, where, params)
        got["keyword"].append(ms(t0))
    return got


def spread(values: list[float]) -> str:
    return f"{pct(values, 50):.1f} / {pct(values, 95):.1f}"


def corpus(data: Path) -> tuple[list[str], list[int], list[str], list[str]]:
    """The LoCoMo vocabulary with its frequencies, its category 1-4 questions, and its
    turns' texts."""
    counts: Counter[str] = Counter()
    questions, texts = [], []
    for path in sorted(data.glob("*.json")):
        conv = json.loads(path.read_text())
        n = 1
        while f"session_{n}" in conv:
            for turn in conv[f"session_{n}"]:
                counts.update(re.findall(r"[A-Za-z']+", turn["text"]))
                texts.append(turn["text"])
            n += 1
        questions += [q["question"] for q in conv["qa"] if q.get("category") in (1, 2, 3, 4)]
    words, weights = zip(*counts.items(), strict=True)
    return list(words), list(weights), questions, texts


def grow(db, model, have, size, words, weights, turn_vectors, rng) -> None:
    """Add events and their search rows up to `size`; each vector is a real turn's with
    noise (norm ~0.45 before normalising: cosine ~0.9 to the turn)."""
    batch = 10_000
    nprng = np.random.default_rng(have)
    for start in range(have, size, batch):
        count = min(batch, size - start)
        texts = [" ".join(rng.choices(words, weights, k=rng.randint(8, 40))) for _ in range(count)]
        dim = turn_vectors.shape[1]
        noise = nprng.standard_normal((count, dim)).astype(np.float32) * (0.45 / dim**0.5)
        vecs = turn_vectors[nprng.integers(0, len(turn_vectors), count)] + noise
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        day = "2024-01-01T12:00:00.000000Z"
        with db.write() as conn:
            ids = []
            for offset, text in enumerate(texts):
                row = conn.execute(
                    "INSERT INTO events (entity, event_uid, channel, event_type, author, content,"
                    " session_id, created_at, received_at)"
                    " VALUES (?, ?, 'bench', 'message', 'someone', ?, ?, ?, ?) RETURNING id",
                    (ENTITY, f"e{start + offset}", text, f"s{(start + offset) // 20}", day, day),
                ).fetchone()
                ids.append(row[0])
            rows = []
            for event_id, text in zip(ids, texts, strict=True):
                body = turns.render(day, "someone", text)
                rows.append((ENTITY, event_id, day, content_hash(text), content_hash(body), body))
            chunk_ids = [
                conn.execute(
                    "INSERT INTO search_chunks (entity, tier, kind, event_id, date, channel,"
                    " content_hash, embed_hash, body) VALUES"
                    " (?, 'longform', 'turn', ?, ?, 'bench', ?, ?, ?) RETURNING id",
                    row,
                ).fetchone()[0]
                for row in rows
            ]
            conn.executemany(
                "INSERT INTO search_vectors (chunk_id, entity, model, vector) VALUES (?, ?, ?, ?)",
                [
                    (i, ENTITY, model, vectors.to_blob(v))
                    for i, v in zip(chunk_ids, vecs, strict=True)
                ],
            )
            vectors.bump(conn, ENTITY)


def ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1]


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


if __name__ == "__main__":
    main()
