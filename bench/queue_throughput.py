"""Queue throughput: enqueue, and claim → run → complete with a no-op handler.

Prints jobs/s; the point is to show the queue's own overhead is small next to an LLM
call (seconds) or an embedding batch (milliseconds)."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from engine.capture import entities
from engine.kernel.config import Settings
from engine.store import queue
from engine.store.db import Database


def enqueue(db: Database, n: int) -> float:
    start = time.perf_counter()
    for i in range(0, n, 100):
        with db.write() as conn:
            for j in range(i, min(i + 100, n)):
                queue.enqueue(conn, "bench", "noop", f"job-{j}", {"n": j})
    return n / (time.perf_counter() - start)


def drain(db: Database, n: int, concurrency: int) -> float:
    workers = queue.Workers(db, queue.Policy(poll_s=0.01))
    workers.add("noop", lambda job: None, concurrency)
    start = time.perf_counter()
    workers.start()
    while db.conn.execute("SELECT COUNT(*) FROM jobs WHERE state = 'done'").fetchone()[0] < n:
        time.sleep(0.01)
    elapsed = time.perf_counter() - start
    workers.stop()
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        for sync in ("FULL", "NORMAL"):
            for concurrency in (1, 4):
                settings = Settings(
                    data_dir=Path(root) / f"{sync}-{concurrency}", sqlite_synchronous=sync
                )
                db = Database.open(settings)
                entities.create(db, "bench")
                rate_in = enqueue(db, args.jobs)
                rate_out = drain(db, args.jobs, concurrency)
                print(
                    f"{sync:6} enqueue {rate_in:8,.0f} jobs/s (100 per transaction)   "
                    f"claim+run+complete, {concurrency} worker(s): {rate_out:6,.0f} jobs/s"
                )
                db.close()


if __name__ == "__main__":
    main()
