"""The graph layer's own costs on FalkorDB (embedded) and on Neo4j 5 (a real 5.26 server
started without Docker by tests/neo4j_server.py), side by side, with the stub LLM
answering at once (tests/stub_llm.py) and the real embedding model:

1. worker overhead per episode, excluding time spent waiting for the LLM: everything
   the handler does (SQLite, embedding, graph reads and writes, Graphiti's own work);
2. texture_search latency (p50/p95) with 1k and 10k facts in one entity's graph, the
   facts written in bulk (no LLM), the query embedded on every call; again with the
   vector index switched off (the exact scan the store falls back to), which shows that
   the index is what answers;
3. the cosine side alone: the vector index's top 10 against the exact scan's
   (recall@10), and the time each takes;
4. a second entity with 1k facts beside the first one's 10k. On Neo4j both share one
   database and one vector index; on FalkorDB each is a graph of its own.

Every figure follows untimed warm-up (`--warmup` searches, the first episodes): Neo4j's
JVM compiles its hot paths over the first few hundred queries (texture_search took
~100 ms over the first hundred on a fresh server, ~22 ms after five hundred).

Prints one table (a column per backend and their ratio); asserts nothing. A real LLM
adds its own seconds per call on top of (1). The store's private parts are used to time
the cosine side alone and to switch the index off; nothing here changes what it does.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Run as `python bench/graph.py`: the repository and tests/ (the stub LLM, the Neo4j
# launcher) on the path, and not bench/ itself, whose ingest.py would shadow the ingest
# package.
ROOT = Path(__file__).resolve().parent.parent
sys.path[0:1] = [str(ROOT), str(ROOT / "tests")]

from neo4j_server import Neo4jServer  # noqa: E402
from stub_llm import StubLLM  # noqa: E402

from engine.capture import entities  # noqa: E402
from engine.capture import events as capture  # noqa: E402
from engine.graph import episodes, texture  # noqa: E402
from engine.graph.backend import Graph  # noqa: E402
from engine.kernel.config import Settings  # noqa: E402
from engine.runtime import CAPTURE_LISTENERS  # noqa: E402
from engine.store import queue  # noqa: E402
from engine.store.db import Database  # noqa: E402

BACKENDS = ("falkordb", "neo4j")
INDEX_WAIT_S = 600.0
WARM_EPISODES = 5  # not timed

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


Figures = dict[str, float | str]
"""label -> figure: timings as floats (ms or s, said in the label), the rest as text."""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(seconds: float) -> float:
    return seconds * 1000


@contextmanager
def backend(name: str, root: Path) -> Iterator[dict]:
    """The settings that point pps at the backend, its server running meanwhile."""
    if name == "falkordb":
        yield {"graph_backend": "falkordb", "graph_url": None}  # pps starts it itself
        return
    folder = root / "neo4j"
    folder.mkdir()
    server = Neo4jServer(folder).start()
    try:
        yield server.settings()
    finally:
        server.stop()


def measure(name: str, args: argparse.Namespace) -> Figures:
    figures: Figures = {}
    with (
        tempfile.TemporaryDirectory() as root,
        StubLLM() as stub,
        backend(name, Path(root)) as chosen,
    ):
        settings = Settings(
            data_dir=Path(root) / "data",
            llm_provider="openai_compatible",
            llm_base_url=stub.url,
            llm_model="stub",
            **chosen,
        )
        db = Database.open(settings)
        graph = Graph(settings, db).start(sweep=False)
        try:
            figures.update(overhead(graph, db, settings, args.episodes))
            figures.update(search(graph, db, args, name))
        finally:
            graph.stop()
            db.close()
    return figures


def overhead(graph: Graph, db: Database, settings: Settings, n: int) -> Figures:
    entities.create(db, "bench-ingest")
    rng = random.Random(7)
    handle = texture.handler(graph, db, settings)
    extra, calls = [], []
    for i in range(WARM_EPISODES + n):
        turns = [
            f"{rng.choice(PEOPLE)} met {rng.choice(PEOPLE)} in {rng.choice(PLACES)}.",
            f"{rng.choice(PEOPLE)} brought a {rng.choice(THINGS)} to {rng.choice(PLACES)}.",
            f"{rng.choice(PEOPLE)} talked about {rng.choice(PLACES)} all evening.",
        ]
        events = [{"channel": "terminal", "author": "Jeff", "content": t} for t in turns]
        parsed = capture.parse_events(events, max_batch=10, max_content_bytes=10_000)
        capture.Capture(db, CAPTURE_LISTENERS).record("bench-ingest", parsed)
        (uuid,) = episodes.close_windows(db, graph.window, force=True)
        row = db.conn.execute("SELECT * FROM jobs WHERE key = ?", (uuid,)).fetchone()
        start = time.perf_counter()
        usage = handle(queue.Job.from_row(row))
        wall = time.perf_counter() - start
        if i < WARM_EPISODES:
            continue  # the first loads the model and builds indices; Neo4j's JVM warms up
        extra.append(wall - usage.seconds)
        calls.append(usage.calls)
    return {
        f"worker overhead per episode ({n} episodes of 3 turns) p50 ms": ms(pct(extra, 0.5)),
        "worker overhead per episode p95 ms": ms(pct(extra, 0.95)),
        "LLM calls per episode (median)": f"{statistics.median(calls):.0f}",
    }


def synthetic_facts(n: int, rng: random.Random) -> list[tuple[str, str, str, str]]:
    rows = []
    for _ in range(n):
        a, b, t = rng.choice(PEOPLE), rng.choice(PLACES + PEOPLE), rng.choice(THINGS)
        relation, template = rng.choice(RELATIONS)
        suffix = rng.randint(1, 10**6)
        rows.append((a, relation, b, template.format(a=a, b=b, t=t) + f" (note {suffix})"))
    return rows


def some_queries(n: int, rng: random.Random) -> list[str]:
    return [
        f"{rng.choice(PEOPLE)} {rng.choice(['in', 'and the'])} {rng.choice(PLACES)}"
        for _ in range(n)
    ]


def load(graph: Graph, entity: str, size: int, rng: random.Random) -> Figures:
    """Bulk-load the entity up to `size` facts, then wait until the vector index answers
    (the store scans every fact meanwhile)."""
    store = graph.store
    start = time.perf_counter()
    have = store.counts(entity)["facts"]
    store.import_facts(entity, synthetic_facts(size - have, rng))
    loaded = time.perf_counter()
    if store.counts(entity)["facts"] != size:
        raise RuntimeError(f"{entity} holds {store.counts(entity)['facts']} facts, not {size}")
    state = index_state(store, entity)
    while state != "ready" and time.perf_counter() - loaded < INDEX_WAIT_S:
        time.sleep(0.1)
        state = index_state(store, entity)
    if state != "ready":
        raise RuntimeError(f"the vector index is still {state} after {INDEX_WAIT_S:.0f} s")
    return {"load s": loaded - start, "index ready after the load s": time.perf_counter() - loaded}


def index_state(store, entity: str) -> str:
    return store._graphs.call(store._dialect.vector_index_state(store._graphs.graph(entity)))


def searches(
    graph: Graph, db: Database, entity: str, queries: list[str], warmup: list[str]
) -> list[float]:
    """texture_search's time for each query, after the warm-up ones (not timed)."""
    times = []
    for query in [*warmup, *queries]:
        start = time.perf_counter()
        found = texture.search(graph, db, entity, texture.SearchQuery(query=query))
        times.append(time.perf_counter() - start)
        if found.status != "ok":
            raise RuntimeError(f"texture_search {query!r}: {found.status}")
    return times[len(warmup) :]


@contextmanager
def exact_scan(graph: Graph) -> Iterator[None]:
    """The store as it runs while the vector index is not ready: Graphiti's exact scan."""

    async def not_ready(*_):
        return None

    dialect = graph.store._dialect
    dialect.similar_edges = not_ready
    try:
        yield
    finally:
        del dialect.similar_edges


def cosine_side(graph: Graph, entity: str, queries: list[str]) -> Figures:
    """The 10 facts nearest each query, through the index and by the exact scan."""
    from graphiti_core.search.search_filters import SearchFilters
    from graphiti_core.search.search_utils import edge_similarity_search

    store = graph.store
    driver = store._graphs.graph(entity).driver
    index_s, exact_s, found, wanted, gave_up = [], [], 0, 0, 0
    for query in queries:
        vector = store._graphs.call(store._embedder.create(query))
        start = time.perf_counter()
        near = store._graphs.call(
            store._dialect.similar_edges(store._graphs.graph(entity), entity, vector, 10)
        )
        index_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        exact = store._graphs.call(
            edge_similarity_search(driver, vector, None, None, SearchFilters(), [entity], 10)
        )
        exact_s.append(time.perf_counter() - start)
        if near is None:
            gave_up += 1  # past _NEO4J_MAX_K: the store scans instead
            continue
        if any(e.group_id != entity for e in near):
            raise RuntimeError(f"the index gave another entity's facts for {query!r}")
        truth = {e.uuid for e in exact}
        found += len(truth & {e.uuid for e in near})
        wanted += len(truth)
    return {
        "cosine side, index p50 ms": ms(pct(index_s, 0.5)),
        "cosine side, exact scan p50 ms": ms(pct(exact_s, 0.5)),
        "recall@10, index vs exact scan": f"{found / max(wanted, 1):.1%}"
        + (f" ({gave_up} of {len(queries)} scanned)" if gave_up else ""),
    }


def search(graph: Graph, db: Database, args: argparse.Namespace, name: str) -> Figures:
    sizes = args.sizes
    rng = random.Random(11)
    figures: Figures = {}
    entities.create(db, "bench-search")
    for size in sizes:
        at = f"{size:,} facts: "
        figures.update({at + k: v for k, v in load(graph, "bench-search", size, rng).items()})
        queries, warmup = some_queries(args.queries, rng), some_queries(args.warmup, rng)
        times = searches(graph, db, "bench-search", queries, warmup)
        with exact_scan(graph):
            exact = searches(graph, db, "bench-search", queries, warmup[:20])
        figures[at + "texture_search p50 ms"] = ms(pct(times, 0.5))
        figures[at + "texture_search p95 ms"] = ms(pct(times, 0.95))
        figures[at + "texture_search, exact scan p50 ms"] = ms(pct(exact, 0.5))
        figures[at + "texture_search, exact scan p95 ms"] = ms(pct(exact, 0.95))
        cosine = cosine_side(graph, "bench-search", queries)
        figures.update({at + k: v for k, v in cosine.items()})
        print(f"{name}: {size:,} facts measured", file=sys.stderr)
    # A second entity, smaller, beside the biggest: one shared database on Neo4j.
    entities.create(db, "bench-other")
    at = f"second entity, {sizes[0]:,} facts beside {sizes[-1]:,}: "
    figures.update({at + k: v for k, v in load(graph, "bench-other", sizes[0], rng).items()})
    queries, warmup = some_queries(args.queries, rng), some_queries(args.warmup, rng)
    times = searches(graph, db, "bench-other", queries, warmup)
    figures[at + "texture_search p50 ms"] = ms(pct(times, 0.5))
    figures[at + "texture_search p95 ms"] = ms(pct(times, 0.95))
    cosine = cosine_side(graph, "bench-other", queries)
    figures.update({at + k: v for k, v in cosine.items()})
    return figures


def cell(value: float | str) -> str:
    if isinstance(value, str):
        return value
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def table(results: dict[str, Figures]) -> str:
    """Markdown: a row per figure, a column per backend, and Neo4j / FalkorDB for times."""
    names = list(results)
    ratio = len(names) == 2
    header = ["", *names, *(["neo4j / falkordb"] if ratio else [])]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label in dict.fromkeys(k for figures in results.values() for k in figures):
        values = [results[name].get(label, "") for name in names]
        cells = [cell(v) for v in values]
        if ratio:
            timed = label.endswith(" ms") and all(isinstance(v, float) for v in values)
            cells.append(f"{values[1] / values[0]:.2f}x" if timed and values[0] else "")
        lines.append("| " + " | ".join([label, *cells]) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--sizes", default="1000,10000", help="fact counts, ascending")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--warmup", type=int, default=300, help="searches run first at each size, not timed"
    )
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    chosen = BACKENDS if args.backend == "both" else (args.backend,)
    results = {}
    for name in chosen:
        start = time.perf_counter()
        results[name] = measure(name, args)
        print(f"{name}: done in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    print(table(results))


if __name__ == "__main__":
    main()
