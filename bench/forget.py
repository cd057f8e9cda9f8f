"""A forget at size: how long `POST /v1/forget` of one event takes (engine.forgetting,
called as the REST route calls it), for an entity of N events with their search rows and
a full recall log, on an idle machine and beside CPU-bound processes.

Run: .venv/bin/python bench/forget.py [--sizes 10000,100000] [--log 10000] [--forgets 7]
     [--hogs N] [--dir D]

Each size gets a fresh data dir: N events written straight into SQLite, each a turn of
LoCoMo's conversations (drawn again and again past their number), every event given its
search row (words; no vectors: the model is off), and `--log` recall log entries of ten
items each (three such turns an item, the shape engine.recall.log writes). Then
`--forgets` events are forgotten one at a time, idle, and as many again beside `--hogs`
CPU-bound processes (default: twice the cores). What a forget does at this size: the
event's versions blanked, its search rows dropped, the recall log read through for
copies, the full-text indexes merged (the database `scrub`) and the WAL emptied. Prints
the median and the slowest, idle and busy, and the ratio of the medians; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __name__ == "__main__":
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from rich.console import Console
from rich.table import Table

from bench.busy import HOG
from bench.search_scale import DATA, corpus
from engine import forgetting
from engine.capture import entities
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.search import turns
from engine.search.index import Index
from engine.store.db import Database

NO_MODEL = "no-such-org/no-such-model"


def _prose() -> list[str]:
    """Turns of real conversation: LoCoMo's (the benchmark data beside the repository)."""
    *_, texts = corpus(DATA)
    return texts


def _fill(data: Path, size: int, prose: list[str], rng: random.Random) -> tuple[Settings, Database]:
    settings = Settings(data_dir=data, graph_backend="none", embedding_model=NO_MODEL)
    db = Database.open(settings)
    entities.create(db, "lyra")
    now = timestamps.now()
    for start in range(0, size, 5000):
        rows = [
            ("lyra", f"lyra-{i}", "terminal", "message", "jeff", rng.choice(prose), now, now)
            for i in range(start, min(start + 5000, size))
        ]
        with db.write() as conn:
            conn.executemany(
                "INSERT INTO events (entity, event_uid, channel, event_type, author, content,"
                " created_at, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
    return settings, db


def _recall_log(db: Database, rows: int, prose: list[str], rng: random.Random) -> None:
    now = timestamps.now()
    for start in range(0, rows, 1000):
        entries = []
        for _ in range(min(1000, rows - start)):
            items = [
                {
                    "layer": "turns",
                    "score": 0.5,
                    "source": {"event_uid": f"lyra-{rng.randrange(10**6)}"},
                    "signals": None,
                    "text": " ".join(rng.sample(prose, 3)),
                }
                for _ in range(10)
            ]
            entries.append(("lyra", rng.choice(prose), 12.0, json.dumps(items), "{}", now))
        with db.write() as conn:
            conn.executemany(
                "INSERT INTO recall_log (entity, context, latency_ms, items, manifest,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                entries,
            )


def _forget(index: Index, uids: list[str]) -> list[float]:
    took = []
    for uid in uids:
        ask = forgetting.ForgetRequest(event_uid=uid)
        started = time.perf_counter()
        forgetting.forget(index, None, "lyra", ask, "bench")
        took.append((time.perf_counter() - started) * 1000)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--log", type=int, default=10_000)
    parser.add_argument("--forgets", type=int, default=7)
    parser.add_argument("--hogs", type=int, default=2 * (os.cpu_count() or 1))
    parser.add_argument("--dir", type=Path, default=None)
    options = parser.parse_args()
    console = Console(width=120)
    table = Table(title="A forget of one event: milliseconds")
    for column in ("events", "recall log", "idle p50", "idle max", "busy p50", "busy max"):
        table.add_column(column, justify="right")
    table.add_column("busy/idle", justify="right")
    rng = random.Random(11)
    prose = _prose()
    with tempfile.TemporaryDirectory(dir=options.dir) as scratch:
        for size in [int(s) for s in options.sizes.split(",")]:
            settings, db = _fill(Path(scratch) / f"data-{size}", size, prose, rng)
            index = Index(settings, db)
            for start in range(1, size + 1, 5000):  # search rows by words, as capture makes them
                with db.write() as conn:
                    turns.admit_stored(conn, "lyra", list(range(start, start + 5000)))
            _recall_log(db, options.log, prose, rng)
            picked = rng.sample(range(size), 2 * options.forgets)
            uids = [f"lyra-{i}" for i in picked]
            idle = _forget(index, uids[: options.forgets])
            hogs = [
                subprocess.Popen([sys.executable, "-c", HOG, "600"]) for _ in range(options.hogs)
            ]
            try:
                busy = _forget(index, uids[options.forgets :])
            finally:
                for hog in hogs:
                    hog.kill()
            db.close()
            table.add_row(
                f"{size:,}",
                f"{options.log:,}",
                f"{statistics.median(idle):.0f}",
                f"{max(idle):.0f}",
                f"{statistics.median(busy):.0f}",
                f"{max(busy):.0f}",
                f"{statistics.median(busy) / statistics.median(idle):.1f}",
            )
            console.print(f"{size:,} events done")
    console.print(table)
    console.print(f"busy: {options.hogs} CPU-bound processes on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
