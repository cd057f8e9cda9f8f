"""`pps check` at size: the time of a check of one entity with N events (and a home of
some files), with nothing wrong, and of the same check with --repair after breaking some
of it.

Run: .venv/bin/python bench/check.py [--events 10000] [--files 50] [--dir D]

A fresh data dir: the events are stored through capture (search rows and embedding jobs
in their transaction, as a server stores them), then each turn gets a vector of the
current model written straight into the index (random: the check looks at presence and
model, not at values) and its job is marked done, as if the workers had run; the files
(~2 KB each) are indexed and embedded by the index itself. Episode windows are closed,
and a summary covers the first half of the events. Prints the timings; asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from engine import consistency
from engine.capture import entities, events
from engine.graph import episodes
from engine.kernel.config import Settings
from engine.runtime import CAPTURE_LISTENERS
from engine.search import vectors
from engine.search.index import Index
from engine.store.db import Database

WORDS = ["garden", "shed", "tomato", "key", "door", "well", "bees", "pepper", "rain"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="pps-check-"))
    settings = Settings(data_dir=root / "data", graph_backend="none")
    db = Database.open(settings)
    entities.create(db, "lyra")
    rng = random.Random(7)
    started = time.monotonic()
    for start in range(0, args.events, 500):
        batch = [
            events.EventIn(
                event_uid=f"e{i}",
                channel="terminal",
                session_id=f"s{i // 40}",
                content=" ".join(rng.choices(WORDS, k=12)),
                created_at=_moment(i),
            )
            for i in range(start, min(start + 500, args.events))
        ]
        events.Capture(db, CAPTURE_LISTENERS).record("lyra", batch)
    index = Index(settings, db)
    dim = index.embedder().dim
    with db.write() as conn:
        rows = conn.execute("SELECT id FROM search_chunks WHERE entity = 'lyra'").fetchall()
        conn.executemany(
            "INSERT INTO search_vectors (chunk_id, entity, model, vector) VALUES (?, 'lyra', ?, ?)",
            [
                (r[0], index.model, vectors.to_blob(np.random.rand(dim).astype(np.float32)))
                for r in rows
            ],
        )
        conn.execute("UPDATE jobs SET state = 'done'")
    home = index.home("lyra")
    for n in range(args.files):
        path = home.path(f"memory/note-{n:03}.md")
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(" ".join(rng.choices(WORDS, k=30)) for _ in range(10))
        path.write_text(f"# Note {n}\n\n{body}\n")
    index.sync_entity("lyra")
    episodes.close_windows(db, episodes.Window(), force=True)
    first, middle = db.conn.execute(
        "SELECT MIN(id), MIN(id) + COUNT(*) / 2 FROM events WHERE entity = 'lyra'"
    ).fetchone()
    db.conn.execute(
        "INSERT INTO summaries (entity, summary_text, summary_type, start_id, end_id,"
        " event_count, created_at) VALUES ('lyra', 'half', 'message', ?, ?, ?, '2026-01-01')",
        (first, middle, middle - first + 1),
    )
    print(f"built {args.events} events, {args.files} files in {time.monotonic() - started:.1f} s")

    for label in ("clean", "clean, again"):
        report = consistency.run(index, None, ["lyra"])
        print(f"check ({label}): {report.seconds:.2f} s, {report.problems} problems")
    with db.write() as conn:
        conn.execute(
            "DELETE FROM search_vectors WHERE chunk_id IN (SELECT id FROM"
            " search_chunks WHERE entity = 'lyra' AND event_id IS NOT NULL LIMIT 1000)"
        )
    home.path("memory/note-000.md").write_text("# Changed\n\nnew words\n")
    report = consistency.run(index, None, ["lyra"])
    print(
        f"check (1000 vectors gone, a file changed): {report.seconds:.2f} s,"
        f" {report.problems} problems"
    )
    report = consistency.run(index, None, ["lyra"], repair=True)
    print(
        f"check --repair: {report.seconds:.2f} s, {report.problems} problems left,"
        f" repaired: {report.entities[0].repaired}"
    )


def _moment(i: int) -> str:
    return f"2026-01-{1 + i // 5000 % 28:02}T{i // 300 % 24:02}:{i // 5 % 60:02}:00Z"


if __name__ == "__main__":
    main()
