"""The graph curator at size: the time to find the duplicates among N entity nodes of one
entity's graph (reading the nodes with their name embeddings and fact counts, then the
normalized names and the cosine of every pair), and to merge them.

Run: .venv/bin/python bench/curator.py [--nodes 10000] [--duplicates 100] [--dir D]

An embedded FalkorDB in a fresh folder; N/2 facts written straight into the graph (no
LLM: `GraphStore.import_facts`, one node per exact name, names embedded by the engine's
model), `--duplicates` of whose names are also written in lower case. Prints the
timings; asserts nothing but that no fact is lost.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from engine.graph import curator
from engine.graph.server import FalkorServer
from engine.graph.store import GraphStore
from engine.kernel.config import Settings

FIRST = ["Ada", "Bea", "Cid", "Dan", "Eve", "Fay", "Gus", "Hal", "Ivy", "Jon"]
LAST = ["Stone", "Marsh", "Brook", "Field", "Wood", "Hill", "Lake", "Ford", "Dale", "Reed"]


def name(i: int) -> str:
    return f"{FIRST[i % 10]} {LAST[(i // 10) % 10]} {i // 100}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--duplicates", type=int, default=100)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="pps-curator-"))
    (folder / "graph").mkdir(parents=True, exist_ok=True)
    with FalkorServer(folder / "graph") as server:
        settings = Settings(
            data_dir=folder, graph_backend="falkordb", graph_url=f"unix://{server.socket_path}"
        )
        store = GraphStore(settings).start()
        try:
            n = args.nodes - args.duplicates
            rows = [(name(i), "KNOWS", name(i + 1), f"{name(i)} knows {name(i + 1)}.")
                    for i in range(0, n, 2)]  # fmt: skip
            rows += [(name(i).lower(), "MET", name(i + 1), f"{name(i).lower()} met.")
                     for i in range(0, 2 * args.duplicates, 2)]  # fmt: skip
            started = time.perf_counter()
            store.import_facts("bench", rows)
            print(f"written: {store.counts('bench')} in {time.perf_counter() - started:.1f} s")
            found = curator.find(store, settings, "bench")
            print(f"find: {found.nodes} nodes, {len(found.groups)} groups in {found.seconds} s")
            merged = curator.merge(store, settings, "bench", dry_run=False)
            assert merged.facts_before == merged.facts_after
            print(
                f"merge: {merged.nodes_merged} nodes, {merged.facts_moved} facts moved,"
                f" {merged.facts_before} facts before and after, in {merged.seconds} s"
            )
        finally:
            store.stop()


if __name__ == "__main__":
    main()
