"""ambient_recall latency with every layer populated, by corpus size.

Run: .venv/bin/python bench/recall.py [--sizes 1000:1000,10000:1000,100000:10000] [--queries N]
[--dir D]

One entity gets, in the real stores: raw turns with their search rows (the longform
tier, made as in bench/search_scale.py: LoCoMo's words, vectors near its turns'),
graph facts in the embedded FalkorDB (as in bench/graph.py), and a handful of
word-photos, summaries, crystals, inventory items and a current space. Each size is
`chunks:facts`. Queries are LoCoMo questions through the same recall service the REST
route and the MCP tool call, default settings. Prints p50/p95 of ambient recall, each
layer's p50 / p95 (from the manifest), and startup recall. With --dir the corpus stays
there between runs and a later run grows it from where it is (building 100k chunks and
10k facts takes minutes). Figures only; nothing is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: bench/ingest.py must not shadow `ingest`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import random
import statistics
import tempfile
import time

from bench.graph import synthetic_facts
from bench.search_scale import DATA, corpus, grow
from engine.capture import entities
from engine.crystal import crystals, summaries
from engine.inventory import items as inventory
from engine.kernel.config import Settings
from engine.recall.ambient import recall
from engine.recall.shapes import RecallRequest
from engine.runtime import Runtime
from engine.search import anchors
from engine.store.db import Database

ENTITY = "scale"


def populate_small_layers(runtime: Runtime) -> None:
    """The curated layers are small by nature: a few of each."""
    for n in range(20):
        anchors.save(
            runtime.index,
            ENTITY,
            anchors.AnchorIn(
                title=f"Anchor {n}",
                content=f"A word-photo about moment {n}: the hearth, the robe, the river.",
            ),
        )
    first = runtime.db.conn.execute("SELECT MIN(id) FROM events").fetchone()[0]
    for n in range(10):
        summaries.store(
            runtime.db,
            ENTITY,
            summaries.SummaryIn(
                summary_text=f"Summary {n}: talk of travel, family and the garden.",
                start_id=first + 20 * n,
                end_id=first + 20 * n + 19,
            ),
        )
    home = runtime.index.home(ENTITY).root
    for n in range(4):
        crystals.crystallize(
            home, crystals.CrystalIn(content=f"Field: steady. Arc: {n}. Seeds: the next trip.")
        )
    inventory.add_space(runtime.db, ENTITY, inventory.SpaceIn(name="study", description="Books."))
    for n in range(30):
        item = inventory.ItemIn(name=f"item {n}", category="wardrobe", space="study")
        inventory.add(runtime.db, ENTITY, item)
    inventory.enter_space(runtime.db, ENTITY, "study")


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return (time.perf_counter() - start) * 1000


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000:1000,10000:1000,100000:10000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--dir", type=Path, default=None, help="keep the corpus here")
    args = parser.parse_args()
    sizes = [tuple(int(x) for x in pair.split(":")) for pair in args.sizes.split(",")]
    words, weights, questions, texts = corpus(DATA)
    rng = random.Random(7)
    questions = rng.sample(questions, min(args.queries, len(questions)))
    with tempfile.TemporaryDirectory() as scratch:
        root = args.dir or Path(scratch)
        settings = Settings(data_dir=root / "data", graph_backend="falkordb", graph_url=None)
        db = Database.open(settings)
        if ENTITY not in {e.name for e in entities.list_all(db)}:
            entities.create(db, ENTITY)
        runtime = Runtime(settings, db)
        runtime.start()
        runtime.wait_loaded()  # the models load after the start
        try:
            turn_vectors = runtime.index.embedder().embed(texts)
            chunks = db.conn.execute(
                "SELECT COUNT(*) FROM search_chunks WHERE entity = ? AND tier = 'longform'",
                (ENTITY,),
            ).fetchone()[0]
            facts = runtime.graph.store.counts(ENTITY)["facts"]
            for want_chunks, want_facts in sizes:
                if want_chunks < chunks or want_facts < facts:
                    print(f"skipped {want_chunks:,}:{want_facts:,}: --dir holds more already")
                    continue
                grow(
                    db,
                    settings.embedding_model,
                    chunks,
                    want_chunks,
                    words,
                    weights,
                    turn_vectors,
                    rng,
                )
                chunks = want_chunks
                if want_facts > facts:
                    facts += runtime.graph.store.import_facts(
                        ENTITY, synthetic_facts(want_facts - facts, rng)
                    )
                if not runtime.db.conn.execute("SELECT 1 FROM summaries").fetchone():
                    populate_small_layers(runtime)
                runtime.index.matrix(ENTITY).wait_for_index()  # built in the background
                recall(runtime, ENTITY, RecallRequest(context="warm up"))
                total, layers = [], {}
                for question in questions:
                    start = time.perf_counter()
                    answer = recall(runtime, ENTITY, RecallRequest(context=question))
                    total.append((time.perf_counter() - start) * 1000)
                    for name, report in answer.manifest.items():
                        layers.setdefault(name, []).append(report.latency_ms)
                startup = [
                    timed(lambda: recall(runtime, ENTITY, RecallRequest(context="startup")))
                    for _ in range(20)
                ]
                parts = ", ".join(
                    f"{name} {pct(values, 50):.0f}/{pct(values, 95):.0f}"
                    for name, values in layers.items()
                )
                print(
                    f"{chunks:>7,} chunks, {facts:>6,} facts: ambient_recall p50 "
                    f"{pct(total, 50):.0f} ms, p95 {pct(total, 95):.0f} ms "
                    f"(layer p50/p95 ms: {parts}); startup p50 {pct(startup, 50):.0f} ms, "
                    f"p95 {pct(startup, 95):.0f} ms",
                    flush=True,
                )
        finally:
            runtime.stop()
            db.close()


if __name__ == "__main__":
    main()
