"""What recording who called costs a call: POST /v1/recall with the record of calls on
(as served) and off (the app without its RecordCalls middleware), in turns on the same
data dir, through the whole app in this process (Starlette's TestClient runs its lifespan
and every middleware).

Run: .venv/bin/python bench/clients_record.py [--turns N] [--calls N] [--rounds N]

One entity with --turns turns; each round serves the app once with the record and once
without, --calls recalls each (after a few to warm up). Prints the p50 and p95 (ms) of
each, their ratio, and how many calls the record kept; asserts nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: bench/ingest.py must not shadow `ingest`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import statistics
import tempfile
import time

from fastapi.testclient import TestClient

from engine.capture import entities
from engine.kernel.config import Settings
from engine.store.db import Database
from pps.app import create_app
from pps.http.calls import RecordCalls

WORDS = ["kettle", "garden", "robe", "coffee", "dawn", "river", "lamp", "window", "letter", "music"]


def serve(settings: Settings, record: bool) -> TestClient:
    app = create_app(settings)
    if not record:
        app.user_middleware = [m for m in app.user_middleware if m.cls is not RecordCalls]
    return TestClient(app)


def sample(settings: Settings, token: str, record: bool, calls: int) -> list[float]:
    headers = {"Authorization": f"Bearer {token}", "X-PPS-Client": "bench"}
    with serve(settings, record) as http:
        http.app.state.service.runtime.wait_loaded()
        took = []
        for i in range(calls + 5):
            context = f"the {WORDS[i % len(WORDS)]} by the {WORDS[(i * 3) % len(WORDS)]}"
            started = time.perf_counter()
            answer = http.post("/v1/recall", json={"context": context}, headers=headers)
            took.append((time.perf_counter() - started) * 1000)
            answer.raise_for_status()
        return took[5:]


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp) / "data")
        db = Database.open(settings)
        token = entities.create(db, "bench")
        db.close()
        with serve(settings, record=False) as http:
            events = [
                {"channel": "terminal", "author": "jeff", "content": f"{WORDS[i % 10]} {i}"}
                for i in range(args.turns)
            ]
            for start in range(0, len(events), 100):
                http.post(
                    "/v1/events",
                    json=events[start : start + 100],
                    headers={"Authorization": f"Bearer {token}"},
                ).raise_for_status()
        on: list[float] = []
        off: list[float] = []
        for _ in range(args.rounds):
            off += sample(settings, token, False, args.calls)
            on += sample(settings, token, True, args.calls)
        db = Database.open(settings)
        kept = db.conn.execute("SELECT count(*) FROM client_calls").fetchone()[0]
        db.close()
    for name, values in (("record off", off), ("record on", on)):
        print(f"{name:>10}: p50 {pct(values, 50):7.2f} ms  p95 {pct(values, 95):7.2f} ms")
    print(f"on/off p50 ratio: {pct(on, 50) / pct(off, 50):.3f}; calls kept: {kept}")


if __name__ == "__main__":
    main()
