"""Ingest benchmark: how fast pps stores events, over real HTTP and straight into the engine.

Run: .venv/bin/python bench/ingest.py [--single N] [--batched N] [--concurrency C] [--dir D]

Prints figures only; it never asserts timings. After every phase it counts the stored rows
with SQL and prints OK or MISMATCH, so dropped writes cannot pass as speed. Every phase runs
with PPS_SQLITE_SYNCHRONOUS=FULL (the default: an fsync per commit) and again with NORMAL.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from engine.capture import entities
from engine.capture import events as capture
from engine.kernel.config import Settings
from engine.runtime import CAPTURE_LISTENERS
from engine.store.db import Database
from pps.process import ServerProcess

BATCH = 100
GOAL_BATCHED, GOAL_SINGLE = 2_000, 300
SUBJECTS, VERBS, OBJECTS, TAILS = (
    part.split("|")
    for part in (
        "The deploy|Jeff|The nightly backup|Our Discord bot|The test suite|That migration|"
        "The memory service|Someone in #general|The new laptop|Lyra",
        "finished|failed again after|was rescheduled around|kept timing out during|"
        "quietly skipped|was blamed for|needs a second look at|fixed|asked about",
        "the SQLite vacuum|yesterday's long conversation about tokens|the cron job|"
        "a flaky network mount|the weekly summary|three duplicate messages|the FTS rebuild|"
        "a half-written design note|the coffee machine outage|the garden photos",
        "Let's check the logs tomorrow morning.|Nobody noticed until lunch.|"
        "I wrote it down so we don't forget.|It might be related to the config change.|"
        "Ask again if it happens twice.|Honestly it was kind of funny.|Back to work now.",
    )
)
console = Console(width=130)


@dataclass
class Result:
    events: int
    requests: int
    seconds: float
    ok: bool
    p50_ms: float | None = None
    p99_ms: float | None = None

    def rate(self, unit: str) -> float:
        return getattr(self, unit) / self.seconds


def make_events(prefix: str, count: int, rng: random.Random) -> list[dict]:
    """`count` events with unique uids and ~200 bytes of varied text."""
    events = []
    for i in range(count):
        content = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
        content += f" (ticket {rng.randrange(10_000)})."
        while len(content) < 180:
            content += " " + rng.choice(TAILS)
        channel = rng.choice(["terminal", "discord"])
        author = rng.choice(["jeff", "lyra", "nexus"]) if channel == "discord" else "jeff"
        uid, session = f"{prefix}-{i:07d}", f"{prefix}-s{i // 500}"
        event = {"event_uid": uid, "channel": channel, "author": author, "content": content}
        events.append({**event, "session_id": session})
    return events


def stored_count(db_path: Path, prefix: str) -> int:
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as conn:
        query = "SELECT COUNT(*) FROM events WHERE event_uid GLOB ?"
        return conn.execute(query, (f"{prefix}-*",)).fetchone()[0]


def post_all(url: str, token: str, bodies: list, latencies: list[float]) -> int:
    """POST each body on one persistent client; return how many events the server stored."""
    stored = 0
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60, trust_env=False) as client:
        for body in bodies:
            start = time.perf_counter()
            response = client.post("/v1/events", json=body)
            latencies.append(time.perf_counter() - start)
            if response.status_code == 200:
                stored += response.json()["stored"]
    return stored


def measure_http_posts(
    server: ServerProcess, token: str, prefix: str, events: list, per_request: int, clients: int
) -> Result:
    """Send `events` in requests of `per_request` (a bare object when 1) from `clients` threads."""
    if per_request == 1:
        bodies = list(events)
    else:
        bodies = [events[i : i + per_request] for i in range(0, len(events), per_request)]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    stored = [0] * clients

    def work(i: int) -> None:
        stored[i] = post_all(server.url, token, bodies[i::clients], latencies[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    cuts = statistics.quantiles([x * 1000 for part in latencies for x in part], n=100)
    counted = stored_count(server.data_dir / "pps.sqlite3", prefix)
    ok = counted == sum(stored) == len(events)
    return Result(len(events), len(bodies), seconds, ok, cuts[49], cuts[98])


def measure_engine_record(data_dir: Path, sync: str, prefix: str, events: list, per_call: int):
    """Capture.record straight into a Database (no HTTP), `per_call` events per transaction."""
    db = Database.open(Settings(data_dir=data_dir, sqlite_synchronous=sync))
    if not db.conn.execute("SELECT 1 FROM entities WHERE name = 'bench'").fetchone():
        entities.create(db, "bench")
    parsed = [capture.EventIn.model_validate(event) for event in events]
    stores = capture.Capture(db, CAPTURE_LISTENERS)
    start = time.perf_counter()
    for i in range(0, len(parsed), per_call):
        stores.record("bench", parsed[i : i + per_call])
    seconds = time.perf_counter() - start
    db.close()
    ok = stored_count(data_dir / "pps.sqlite3", prefix) == len(events)
    return Result(len(events), len(events) // per_call, seconds, ok)


def run_all(args: argparse.Namespace, root: Path) -> list[tuple[str, str, Result]]:
    rng = random.Random(42)
    rows: list[tuple[str, str, Result]] = []

    def note(sync: str, phase: str, result: Result) -> None:
        rows.append((sync, phase, result))
        verdict = "OK" if result.ok else "[red]MISMATCH[/]"
        rate = f"{result.rate('events'):>9,.0f} events/s"
        console.print(f"  {sync:6} {phase:28} {rate}  stored rows {verdict}")

    for sync in ("FULL", "NORMAL"):
        (root / f"http-{sync}").mkdir()
        env = {"PPS_SQLITE_SYNCHRONOUS": sync}
        with ServerProcess(root / f"http-{sync}" / "data", env=env) as server:
            token = server.pps("entity", "create", "bench").strip()
            for phase, per_request, clients, count in [
                ("HTTP 1/request, 1 client", 1, 1, args.single),
                (f"HTTP 1/request, {args.concurrency} clients", 1, args.concurrency, args.single),
                (f"HTTP {BATCH}/request, 1 client", BATCH, 1, args.batched),
            ]:
                prefix = f"{sync}-{len(rows)}"
                events = make_events(prefix, count, rng)
                result = measure_http_posts(server, token, prefix, events, per_request, clients)
                note(sync, phase, result)
        for phase, per_call, count in [
            (f"engine {BATCH}/transaction", BATCH, args.batched),
            ("engine 1/transaction", 1, args.single),
        ]:
            prefix = f"{sync}-{len(rows)}"
            events = make_events(prefix, count, rng)
            result = measure_engine_record(root / f"engine-{sync}", sync, prefix, events, per_call)
            note(sync, phase, result)
    return rows


def print_summary(rows: list[tuple[str, str, Result]], args: argparse.Namespace) -> None:
    table = Table(title=f"pps ingest: {os.cpu_count()} CPUs, data under {args.dir or '$TMPDIR'}")
    columns = "sync|phase|events|requests|seconds|events/s|requests/s|p50 ms|p99 ms|stored rows"
    for name in columns.split("|"):
        table.add_column(name, justify="left" if name in ("sync", "phase") else "right")
    for sync, phase, r in rows:
        latency = [f"{ms:.2f}" if ms is not None else "-" for ms in (r.p50_ms, r.p99_ms)]
        rates = [f"{r.rate('events'):,.0f}", f"{r.rate('requests'):,.0f}"]
        counts = [f"{r.events:,}", f"{r.requests:,}", f"{r.seconds:.2f}"]
        table.add_row(sync, phase, *counts, *rates, *latency, "OK" if r.ok else "MISMATCH")
    console.print(table)
    full = {phase: r for sync, phase, r in rows if sync == "FULL" and phase.startswith("HTTP")}
    goals = [(f">= {GOAL_BATCHED:,} events/s batched over HTTP", "events", GOAL_BATCHED)]
    goals.append((f">= {GOAL_SINGLE} single-event requests/s", "requests", GOAL_SINGLE))
    for text, unit, goal in goals:
        for phase, r in full.items():
            if (unit == "events") == phase.startswith(f"HTTP {BATCH}/"):
                met = r.ok and r.rate(unit) >= goal
                verdict = "[green]met[/]" if met else "[red]NOT met[/]"
                console.print(f"goal {text}: {r.rate(unit):,.0f} ({phase}, FULL) {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=2_000, help="single-event requests")
    parser.add_argument("--batched", type=int, default=50_000, help="events sent 100 a request")
    parser.add_argument("--concurrency", type=int, default=4, help="client threads")
    parser.add_argument("--dir", help="where the temporary data dirs go (fsync cost varies)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pps-bench-", dir=args.dir) as tmp:
        rows = run_all(args, Path(tmp))
    print_summary(rows, args)


if __name__ == "__main__":
    main()
