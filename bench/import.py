"""Import benchmark: events/s importing Claude Code transcripts through the client.

Run: .venv/bin/python bench/import.py [--lines N] [--sessions S] [--batch B] [--dir D]

Generates N transcript lines (default 100,000) shaped like Claude Code's (user prompts,
assistant text, tool calls and results, system lines) in S session files, then imports
them into a real `pps serve` child four ways: fresh, again (every event a duplicate),
with the service stopped (everything spooled), and the `pps ingest flush` that follows.
Prints figures only; after each phase the stored rows are counted with SQL (OK/MISMATCH).
The graph is off (GRAPH_BACKEND=none): this measures the capture path, not extraction.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console
from rich.table import Table

# Run as a script, this folder comes first on sys.path, and bench/ingest.py would shadow
# the ingest package: look in the repository root instead.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

from engine.kernel.config import Settings  # noqa: E402
from ingest.client import Client  # noqa: E402
from ingest.importers import Import, Summary  # noqa: E402
from ingest.importers import claude_code as transcripts  # noqa: E402
from ingest.spool import Spool  # noqa: E402
from pps.process import ServerProcess  # noqa: E402

console = Console(width=120)
WORDS = [
    "the",
    "backup",
    "robe",
    "river",
    "migration",
    "summary",
    "token",
    "graph",
    "kitchen",
    "morning",
    "garden",
    "deploy",
    "memory",
    "crystal",
    "wardrobe",
    "coffee",
    "test",
    "window",
    "session",
    "episode",
    "anchor",
    "texture",
    "photo",
]


def write_transcripts(folder: Path, lines: int, sessions: int, rng: random.Random) -> int:
    """`lines` JSONL lines over `sessions` files; returns how many are turns (events)."""
    folder.mkdir(parents=True)
    per_file = lines // sessions
    turns = 0
    moment = datetime(2026, 1, 4, tzinfo=UTC)
    for s in range(sessions):
        session = str(uuid.uuid4())
        with open(folder / f"{session}.jsonl", "w") as file:
            for i in range(per_file if s < sessions - 1 else lines - per_file * s):
                moment += timedelta(seconds=3)
                base = {
                    "uuid": str(uuid.uuid4()),
                    "sessionId": session,
                    "timestamp": moment.isoformat().replace("+00:00", "Z"),
                    "cwd": "/srv/jeff/pps",
                    "gitBranch": "main",
                    "isSidechain": False,
                }
                text = " ".join(rng.choices(WORDS, k=rng.randint(8, 60)))
                kind = i % 10
                if kind in (0, 5):
                    record = {"type": "user", "message": {"role": "user", "content": text}}
                    turns += 1
                elif kind in (1, 2, 4, 6, 7):
                    block = {"type": "text", "text": text}
                    record = {"type": "assistant", "message": {"content": [block]}}
                    turns += 1
                elif kind == 3:
                    use = {"type": "tool_use", "id": "t", "name": "Bash", "input": {}}
                    record = {"type": "assistant", "message": {"content": [use]}}
                elif kind == 8:
                    result = {"type": "tool_result", "tool_use_id": "t", "content": text}
                    record = {"type": "user", "message": {"content": [result]}}
                else:
                    record = {"type": "system", "subtype": "stop_hook_summary"}
                file.write(json.dumps({**base, **record}) + "\n")
    return turns


def stored(server: ServerProcess) -> int:
    with sqlite3.connect(f"file:{server.data_dir / 'pps.sqlite3'}?mode=ro", uri=True) as db:
        return db.execute("SELECT COUNT(*) FROM events").fetchone()[0]


def run_import(server, token, folder, spool_path, batch) -> tuple[Summary, float]:
    settings = Settings()
    with Client(server.url, token, Spool(spool_path), timeout=60, batch=batch) as client:
        importer = Import(
            client, Summary("claude-code"), max_content_bytes=settings.max_content_bytes
        )
        started = time.perf_counter()
        summary = transcripts.run(importer, [folder])
        return summary, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000, help="transcript lines")
    parser.add_argument("--sessions", type=int, default=20, help="session files")
    parser.add_argument("--batch", type=int, default=500, help="events per request")
    parser.add_argument("--dir", help="where the temporary files go (fsync cost varies)")
    args = parser.parse_args()
    rng = random.Random(7)
    rows = []
    with tempfile.TemporaryDirectory(prefix="pps-bench-import-", dir=args.dir) as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        turns = write_transcripts(root / "projects", args.lines, args.sessions, rng)
        size = sum(f.stat().st_size for f in (root / "projects").iterdir())
        console.print(
            f"generated {args.lines:,} lines ({turns:,} turns, {size / 1e6:.1f} MB) in"
            f" {time.perf_counter() - started:.1f}s"
        )
        env = {"GRAPH_BACKEND": "none"}
        with ServerProcess(root / "data", env=env) as server:
            token = server.pps("entity", "create", "bench").strip()
            spool = root / "client" / "spool.jsonl"
            for phase in ("fresh import", "re-import (duplicates)"):
                summary, seconds = run_import(server, token, root / "projects", spool, args.batch)
                ok = stored(server) == turns and summary.imported + summary.duplicates == turns
                rows.append((phase, args.lines, turns, seconds, ok))
                console.print(f"  {phase:28} {turns / seconds:>9,.0f} events/s  {_ok(ok)}")

            server.stop()
            fresh = root / "client" / "spool-down.jsonl"
            summary, seconds = run_import(server, token, root / "projects", fresh, args.batch)
            ok = summary.spooled == turns and Spool(fresh).pending() == turns
            rows.append(("service stopped: spooled", args.lines, turns, seconds, ok))
            console.print(f"  {'service stopped: spooled':28} {turns / seconds:>9,.0f} events/s")

            server.start()
            with Client(server.url, token, Spool(fresh), batch=args.batch) as client:
                started = time.perf_counter()
                result = client.flush()
                seconds = time.perf_counter() - started
            ok = result.pending == 0 and result.duplicates == turns and stored(server) == turns
            rows.append(("flush of that spool", args.lines, turns, seconds, ok))
            console.print(f"  {'flush of that spool':28} {turns / seconds:>9,.0f} events/s")

    table = Table(title=f"pps import: {os.cpu_count()} CPUs, batch {args.batch}")
    for name in ("phase", "lines", "events", "seconds", "lines/s", "events/s", "stored rows"):
        table.add_column(name, justify="left" if name == "phase" else "right")
    for phase, lines, events, seconds, ok in rows:
        table.add_row(
            phase,
            f"{lines:,}",
            f"{events:,}",
            f"{seconds:.2f}",
            f"{lines / seconds:,.0f}",
            f"{events / seconds:,.0f}",
            "OK" if ok else "MISMATCH",
        )
    console.print(table)


def _ok(ok: bool) -> str:
    return "stored rows OK" if ok else "[red]MISMATCH[/]"


if __name__ == "__main__":
    main()
