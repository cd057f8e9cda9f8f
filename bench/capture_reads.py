"""Reads per captured row: how many statements read the `events` table while capture
stores one batch of N turns and tells its listeners (search, the graph, recall's used
marks, the versions an edit replaces), inside the batch's transaction.

Run: .venv/bin/python bench/capture_reads.py [--sizes 1,50] [--history 2000] [--repeat 7]
[--dir D]

A fresh data dir with `--history` turns already stored; then, for each size, one batch of
N turns (users and assistants taking turns in one session, each with its client's
event_uid, as the hooks send them) is recorded with a trace callback on the connection
that writes it. A statement reads `events` when it selects from it (FROM or JOIN events);
the INSERTs themselves and the full-text index's triggers are not counted. Prints the
statements, those that read `events`, that count per captured row, and the median time of
`--repeat` such batches (the first one traced); asserts nothing.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from engine.capture import entities
from engine.capture import events as capture
from engine.kernel.config import Settings
from engine.runtime import CAPTURE_LISTENERS
from engine.store.db import Database

READS_EVENTS = re.compile(r"\b(FROM|JOIN)\s+events\b", re.IGNORECASE)
WORDS = ["garden", "shed", "tomato", "key", "door", "well", "bees", "pepper", "rain"]


def batch(start: int, size: int) -> list[capture.EventIn]:
    return [
        capture.EventIn(
            event_uid=f"turn-{i}",
            channel="terminal",
            session_id=f"s{i // 100}",
            author="jeff" if i % 2 == 0 else "lyra",
            role="user" if i % 2 == 0 else "assistant",
            content=" ".join(WORDS[(i + k) % len(WORDS)] for k in range(12)),
        )
        for i in range(start, start + size)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,50")
    parser.add_argument("--history", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=None)
    options = parser.parse_args()
    root = options.dir or Path(tempfile.mkdtemp(prefix="pps-capture-reads-"))
    db = Database.open(Settings(data_dir=root / "data", graph_backend="none"))
    entities.create(db, "lyra")
    stores = capture.Capture(db, CAPTURE_LISTENERS)
    for start in range(0, options.history, 500):
        stores.record("lyra", batch(start, min(500, options.history - start)))
    table = Table(title="One batch of N turns through capture")
    for column in ("N", "statements", "reading events", "per captured row", "median ms"):
        table.add_column(column, justify="right")
    at = options.history
    for size in [int(s) for s in options.sizes.split(",")]:
        said: list[str] = []
        db.conn.set_trace_callback(said.append)
        stores.record("lyra", batch(at, size))
        db.conn.set_trace_callback(None)
        at += size
        took = []
        for _ in range(options.repeat):
            events = batch(at, size)
            started = time.perf_counter()
            stores.record("lyra", events)
            took.append((time.perf_counter() - started) * 1000)
            at += size
        reads = [s for s in said if READS_EVENTS.search(s) and not s.lstrip().startswith("INSERT")]
        table.add_row(
            str(size),
            str(len(said)),
            str(len(reads)),
            f"{len(reads) / size:.2f}",
            f"{statistics.median(took):.1f}",
        )
    db.close()
    Console().print(table)


if __name__ == "__main__":
    main()
