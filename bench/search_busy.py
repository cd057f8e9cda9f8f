"""Search on a busy machine: a real `pps serve`, one entity with the turns of a LoCoMo
conversation, its questions as queries over HTTP, with and without the reranker, on a
quiet machine and beside CPU-bound processes.

Run: .venv/bin/python bench/search_busy.py [--data DIR] [--turns N] [--queries Q]
     [--burners B] [--budget-ms MS]

Phases, each a table row: the server with the reranker (the default settings, or
`--budget-ms` for PPS_SEARCH_RERANK_BUDGET_MS), quiet, then with B processes that spin a
core each beside it (`while True: pass`, killed when the phase ends); then the same
server restarted with PPS_SEARCH_RERANK=0, quiet and busy. Printed per phase: search
p50 / p95 (ms, over HTTP), and how many of its candidates the reranker read in all,
where the answer says so (`reranked`). Asserts nothing; "quiet" is the machine as it is
(the load average is printed).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: bench/ingest.py must not shadow `ingest`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import httpx
from rich.console import Console
from rich.table import Table

from engine.capture import entities
from engine.kernel.config import Settings
from engine.store.db import Database
from pps.process import ServerProcess

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo10"
console = Console(width=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--turns", type=int, default=400, help="turns of the first conversation")
    parser.add_argument("--queries", type=int, default=30, help="searches a phase")
    parser.add_argument("--burners", type=int, default=4, help="CPU-bound processes when busy")
    parser.add_argument("--budget-ms", type=float, default=None)
    parser.add_argument(
        "--only", choices=("reranker", "no-reranker"), default=None, help="one server's phases"
    )
    args = parser.parse_args()

    conversation = json.loads(sorted(args.data.glob("*.json"))[0].read_text())
    turns, questions = said(conversation, args.turns)
    folder = Path(tempfile.mkdtemp(prefix="pps-search-busy-"))
    data_dir = folder / "data"
    db = Database.open(Settings(data_dir=data_dir))
    token = entities.create(db, "lyra")
    db.close()
    env = {"PPS_GRAPH_BACKEND": "none"}
    if args.budget_ms is not None:
        env["PPS_SEARCH_RERANK_BUDGET_MS"] = str(args.budget_ms)
    console.print(f"search over HTTP, {len(turns)} LoCoMo turns, {args.queries} queries a phase")
    table = Table()
    for column in ("phase", "load avg", "search p50 / p95 ms", "reranked (read of asked)"):
        table.add_column(column, justify="right")
    servers = (("reranker", {}), ("no-reranker", {"PPS_SEARCH_RERANK": "0"}))
    for label, more in [(name, env) for name, env in servers if args.only in (None, name)]:
        server = ServerProcess(data_dir, env={**env, **more}).start(timeout=300)
        try:
            client = httpx.Client(
                base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=120
            )
            if not client.get("/v1/queue").json()["counts"].get("done"):
                client.post("/v1/events", json=turns).raise_for_status()
                embedded(client)
            run(client, questions[:3])  # the models loaded and warm
            for phase, burners in (("quiet", 0), (f"{args.burners} busy processes", args.burners)):
                spinning = [burn() for _ in range(burners)]
                try:
                    time.sleep(1 if burners else 0)
                    load = os.getloadavg()[0]
                    ms, read = run(client, questions[: args.queries])
                finally:
                    for proc in spinning:
                        proc.kill()
                        proc.wait()
                row = (
                    f"{label}, {phase}",
                    f"{load:.1f}",
                    f"{pct(ms, 50):.0f} / {pct(ms, 95):.0f}",
                    f"{read[0]} of {read[1]}" if read[1] else "-",
                )
                console.print(" | ".join(row))  # as it comes: a phase can take minutes
                table.add_row(*row)
            client.close()
        finally:
            server.stop()
    console.print(table)


def said(conversation: dict, most: int) -> tuple[list[dict], list[str]]:
    conv = conversation.get("conversation", conversation)
    turns, n = [], 1
    while f"session_{n}" in conv and len(turns) < most:
        for turn in conv[f"session_{n}"]:
            turns.append(
                {
                    "event_uid": turn["dia_id"],
                    "channel": "discord",
                    "author": turn["speaker"],
                    "content": turn["text"],
                    "session_id": f"s-{n}",
                }
            )
        n += 1
    questions = [qa["question"] for qa in conversation["qa"] if qa.get("category") in (1, 2, 4)]
    return turns[:most], questions


def embedded(client: httpx.Client) -> None:
    """Wait until the embedding jobs are done: quiet means quiet."""
    while True:
        counts = client.get("/v1/queue").json()["counts"]
        if counts.get("done") and not any(counts[s] for s in ("pending", "running", "retry")):
            return
        time.sleep(0.5)


def run(client: httpx.Client, questions: list[str]) -> tuple[list[float], tuple[int, int]]:
    ms, read, asked = [], 0, 0
    for question in questions:
        started = time.perf_counter()
        response = client.post("/v1/search", json={"query": question, "tiers": "longform"})
        ms.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
        if said_ := response.json().get("reranked"):
            n, m = (int(x) for x in said_.split(" of "))
            read, asked = read + n, asked + m
    return ms, (read, asked)


def burn() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


if __name__ == "__main__":
    main()
