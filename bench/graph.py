"""The graph layer's own costs, with the stub LLM answering at once (tests/stub_llm.py),
the embedded FalkorDB and the real embedding model:

1. worker overhead per episode, excluding time spent waiting for the LLM: everything
   the handler does (SQLite, embedding, graph reads and writes, Graphiti's own work);
2. texture_search latency (p50/p95) with 1k and 10k facts in one entity's graph,
   the facts written in bulk (no LLM), the query embedded on every call.

Prints figures; asserts nothing. A real LLM adds its own seconds per call on top of (1).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

# Run as `python bench/graph.py`: the repository and tests/ (the stub LLM) on the path,
# and not bench/ itself, whose ingest.py would shadow the ingest package.
ROOT = Path(__file__).resolve().parent.parent
sys.path[0:1] = [str(ROOT), str(ROOT / "tests")]

from stub_llm import StubLLM  # noqa: E402

from engine.capture import entities  # noqa: E402
from engine.capture import events as capture  # noqa: E402
from engine.graph import episodes, texture  # noqa: E402
from engine.graph.backend import Graph  # noqa: E402
from engine.runtime import CAPTURE_LISTENERS  # noqa: E402
from engine.store import queue  # noqa: E402
from engine.store.config import Settings  # noqa: E402
from engine.store.db import Database  # noqa: E402

PEOPLE = [
    "Jeff",
    "Lyra",
    "Nexus",
    "Orion",
    "Vega",
    "Mira",
    "Rigel",
    "Deneb",
    "Altair",
    "Sirius",
    "Procyon",
    "Cora",
    "Ilse",
    "Tomas",
]
PLACES = [
    "Denver",
    "Boulder",
    "Paris",
    "Lisbon",
    "Oslo",
    "Tucson",
    "Austin",
    "Prague",
    "Chile",
    "Madeira",
    "Kyoto",
    "Quito",
]
THINGS = [
    "telescope",
    "cello",
    "garden",
    "kayak",
    "novel",
    "satellite",
    "bakery",
    "violin",
    "lighthouse",
    "orchard",
]
RELATIONS = [
    ("LIVES_IN", "{a} lives in {b}."),
    ("VISITED", "{a} visited {b} last year."),
    ("WORKS_AT", "{a} works at the {b} office."),
    ("OWNS", "{a} owns a {t} from {b}."),
    ("LIKES", "{a} likes the {t} near {b}."),
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def overhead(graph: Graph, db: Database, settings: Settings, n: int) -> None:
    entities.create(db, "bench-ingest")
    rng = random.Random(7)
    handle = texture.handler(graph, db, settings)
    extra, llm_s, calls = [], [], []
    for i in range(n + 1):
        turns = [
            f"{rng.choice(PEOPLE)} met {rng.choice(PEOPLE)} in {rng.choice(PLACES)}.",
            f"{rng.choice(PEOPLE)} brought a {rng.choice(THINGS)} to {rng.choice(PLACES)}.",
            f"{rng.choice(PEOPLE)} talked about {rng.choice(PLACES)} all evening.",
        ]
        events = [{"channel": "terminal", "author": "Jeff", "content": t} for t in turns]
        parsed = capture.parse_events(events, max_batch=10, max_content_bytes=10_000)
        capture.record(db, "bench-ingest", parsed, CAPTURE_LISTENERS)
        (uuid,) = episodes.close_windows(db, graph.window, force=True)
        row = db.conn.execute("SELECT * FROM jobs WHERE key = ?", (uuid,)).fetchone()
        start = time.perf_counter()
        usage = handle(queue.Job.from_row(row))
        wall = time.perf_counter() - start
        if i == 0:
            continue  # the first one loads the model and builds indices
        extra.append(wall - usage.seconds)
        llm_s.append(usage.seconds)
        calls.append(usage.calls)
    print(
        f"worker overhead per episode (3 turns, excluding LLM wait), {n} episodes: "
        f"p50 {pct(extra, 0.5) * 1000:.0f} ms, p95 {pct(extra, 0.95) * 1000:.0f} ms; "
        f"LLM calls per episode: median {statistics.median(calls):.0f} "
        f"(stub answered in p50 {pct(llm_s, 0.5) * 1000:.0f} ms total)"
    )


def synthetic_facts(n: int, rng: random.Random) -> list[tuple[str, str, str, str]]:
    rows = []
    for _ in range(n):
        a, b, t = rng.choice(PEOPLE), rng.choice(PLACES + PEOPLE), rng.choice(THINGS)
        relation, template = rng.choice(RELATIONS)
        suffix = rng.randint(1, 10**6)
        rows.append((a, relation, b, template.format(a=a, b=b, t=t) + f" (note {suffix})"))
    return rows


def search_latency(graph: Graph, db: Database, sizes: list[int], queries: int) -> None:
    rng = random.Random(11)
    entities.create(db, "bench-search")
    loaded = 0
    for size in sizes:
        start = time.perf_counter()
        loaded += graph.store.import_facts("bench-search", synthetic_facts(size - loaded, rng))
        load_s = time.perf_counter() - start
        assert graph.store.counts("bench-search")["facts"] == size
        texture.search(graph, db, "bench-search", texture.SearchQuery(query="warm up"))
        times, hits = [], 0
        for _ in range(queries):
            query = f"{rng.choice(PEOPLE)} {rng.choice(['in', 'and the'])} {rng.choice(PLACES)}"
            start = time.perf_counter()
            found = texture.search(graph, db, "bench-search", texture.SearchQuery(query=query))
            times.append(time.perf_counter() - start)
            hits += len(found.facts)
        print(
            f"texture_search with {size:>6,} facts: p50 {pct(times, 0.5) * 1000:.0f} ms, "
            f"p95 {pct(times, 0.95) * 1000:.0f} ms ({queries} queries, limit 10, "
            f"{hits / queries:.1f} facts each; loading took {load_s:.0f} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--sizes", default="1000,10000", help="fact counts, ascending")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root, StubLLM() as stub:
        settings = Settings(
            data_dir=Path(root) / "data",
            graph_backend="falkordb",
            graph_url=None,
            llm_provider="openai_compatible",
            llm_base_url=stub.url,
            llm_model="stub",
        )
        db = Database.open(settings)
        graph = Graph(settings, db).start(sweep=False)
        try:
            overhead(graph, db, settings, args.episodes)
            search_latency(graph, db, [int(s) for s in args.sizes.split(",")], args.queries)
        finally:
            graph.stop()
            db.close()


if __name__ == "__main__":
    main()
