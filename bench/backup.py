"""`pps backup` and `pps restore` at size: peak RSS of each process, time and archive size,
for an entity of N events (and a second, smaller one), with homes of some files.

Run: .venv/bin/python bench/backup.py [--sizes 10000,100000] [--files 200] [--dir D]

Each size gets a fresh data dir: the events are written straight into SQLite (the FTS
index by its triggers; no search rows or vectors), N for `lyra` and N/10 for `nova`, and
`--files` markdown files (~2 KB each) in each home. Then, each as its own process:
a whole backup, `--entity lyra`, one encrypted to an age key, one with a passphrase;
and the restore of the plain, the keyed and the passphrase archive. Peak RSS is the
process's own ru_maxrss (a wrapper reads RUSAGE_CHILDREN of its one child). Streaming
shows as a peak that does not grow with N; the passphrase mode holds the archive in
memory (pyrage's passphrase API takes and returns whole bytes), and age's scrypt takes
its own memory: rage calibrates the work factor to about a second on the machine that
encrypts, so its share (up to 1 GiB at 2^20) depends on that machine's speed then.

Prints one table row per step; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from engine.capture import entities
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.store.db import Database

ROOT = Path(__file__).resolve().parent.parent
WORDS = [
    "garden",
    "kitchen",
    "robe",
    "lighthouse",
    "keeper",
    "harbor",
    "honey",
    "bicycle",
    "library",
    "tea",
    "moon",
]
PASSPHRASE = "bench passphrase, not a secret"
_WRAPPER = (
    "import json, resource, subprocess, sys, time\n"
    "start = time.perf_counter()\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "print(json.dumps({'rc': done.returncode, 'err': done.stderr[-400:],"
    " 'seconds': time.perf_counter() - start,"
    " 'peak_kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))\n"
)


def fill(data: Path, events: int, files: int) -> None:
    settings = Settings(data_dir=data, graph_backend="none")
    db = Database.open(settings)
    rng = random.Random(7)
    for name, count in (("lyra", events), ("nova", events // 10)):
        entities.create(db, name)
        now = timestamps.now()
        for start in range(0, count, 5000):
            rows = [
                (
                    name,
                    f"{name}-{i}",
                    "terminal",
                    "turn",
                    "jeff",
                    "user",
                    " ".join(rng.choice(WORDS) for _ in range(30)) + f" #{i}",
                    now,
                    now,
                )
                for i in range(start, min(start + 5000, count))
            ]
            with db.write() as conn:
                conn.executemany(
                    "INSERT INTO events (entity, event_uid, channel, event_type, author, role,"
                    " content, created_at, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
        home = data / "entities" / name / "memory"
        home.mkdir(parents=True, exist_ok=True)
        for n in range(files):
            text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(30))
            (home / f"note_{n:04d}.md").write_text(f"# Note {n}\n\n{text}\n")
    db.close()


def run(*args: str, env: dict[str, str] | None = None) -> dict:
    command = [sys.executable, "-m", "pps.cli", *args]
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "GRAPH_BACKEND": "none", **(env or {})},
        check=True,
    )
    result = json.loads(done.stdout)
    if result["rc"] != 0:
        raise SystemExit(f"pps {' '.join(args)} failed: {result['err']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    options = parser.parse_args()
    from pyrage import x25519

    key = x25519.Identity.generate()
    table = Table(title="pps backup / restore: peak RSS, time, archive size")
    for column in ("events (lyra + nova)", "step", "peak RSS MB", "seconds", "archive MB"):
        table.add_column(column, justify="right" if column != "step" else "left")
    console = Console(width=120)
    with tempfile.TemporaryDirectory(dir=options.dir) as scratch:
        root = Path(scratch)
        identity = root / "bench.key"
        identity.write_text(f"{key}\n")
        for size in [int(s) for s in options.sizes.split(",")]:
            data = root / f"data-{size}"
            started = time.perf_counter()
            fill(data, size, options.files)
            label = f"{size} + {size // 10}"
            console.print(f"{label}: filled in {time.perf_counter() - started:.1f} s")
            database_mb = (data / "pps.sqlite3").stat().st_size / 1e6
            table.add_row(label, f"(database {database_mb:.0f} MB)", "", "", "")
            steps = [
                ("backup", "plain.tar", [], {}),
                ("backup --entity lyra", "lyra.tar", ["--entity", "lyra"], {}),
                ("backup --recipient", "key.age", ["--recipient", str(key.to_public())], {}),
                (
                    "backup --encrypt (passphrase)",
                    "pass.age",
                    ["--encrypt"],
                    {"PPS_BACKUP_PASSPHRASE": PASSPHRASE},
                ),
            ]
            for step, name, extra, env in steps:
                out = root / f"{size}-{name}"
                result = run("backup", str(out), *extra, "--data-dir", str(data), env=env)
                table.add_row(label, step, _mb(result), f"{result['seconds']:.1f}", _size(out))
            restores = [
                ("restore (plain)", "plain.tar", [], {}),
                ("restore --identity", "key.age", ["--identity", str(identity)], {}),
                ("restore (passphrase)", "pass.age", [], {"PPS_BACKUP_PASSPHRASE": PASSPHRASE}),
            ]
            for step, name, extra, env in restores:
                target = root / f"restored-{size}-{name}"
                archive = root / f"{size}-{name}"
                result = run("restore", str(archive), "--data-dir", str(target), *extra, env=env)
                table.add_row(label, step, _mb(result), f"{result['seconds']:.1f}", "")
    console.print(table)


def _mb(result: dict) -> str:
    return f"{result['peak_kb'] / 1024:.0f}"


def _size(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:.1f}"


if __name__ == "__main__":
    main()
