"""Operator commands' start: how long a light `pps` command takes from spawn to exit.

`pps entity list`, `pps operator token`, `pps audit export -`, `pps queue`, `pps shared
list` and `pps entity create` each open the data dir through the front door
(`Service.open`) and read or write a few rows: what they cost is mostly what they import.
Each run spawns `python -c "... from pps.cli import app; app()"` in a tree, on one data
dir (made fresh, with one entity). With `--tree DIR` (repeatable: another checkout of
pps, an older one say) the trees' runs alternate, command by command, so that a busy
machine slows each alike. Prints each command's median and fastest run in each tree,
and the heavy packages it loaded there (numpy, faiss, the models, the LLM clients).

    python bench/command_start.py [--runs N] [--tree DIR ...]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "entity list": ["entity", "list"],
    "operator token": ["operator", "token"],
    "audit export -": ["audit", "export", "-"],
    "queue": ["queue"],
    "shared list": ["shared", "list"],
    "entity create": ["entity", "create", "{name}"],
}
HEAVY = ("numpy", "faiss", "onnxruntime", "fastembed", "graphiti_core", "openai", "anthropic")
RUN = "import sys; sys.argv = ['pps', *{argv!r}]; from pps.cli import app; app()"
LOADED = (
    "import atexit, json, sys\n"
    "atexit.register(lambda: print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})),"
    " file=sys.stderr))\n" + RUN
)


def run(tree: Path, argv: list[str], env: dict[str, str], code: str = RUN) -> tuple[float, str]:
    """Seconds from spawn to exit, and stderr (the command must succeed)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code.format(argv=argv)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv)} in {tree} failed: {done.stderr[-2000:]}")
    return elapsed, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--tree", type=Path, action="append", default=[], help="another pps")
    args = parser.parse_args()
    trees = [ROOT, *(t.resolve() for t in args.tree)]
    names = (f"e{n}" for n in itertools.count())
    with tempfile.TemporaryDirectory() as data_dir:
        env = dict(os.environ, PPS_DATA_DIR=data_dir, GRAPH_BACKEND="none")
        run(ROOT, ["entity", "create", "probe"], env)
        times: dict[tuple[str, Path], list[float]] = {}
        for _ in range(args.runs):
            for command, argv in COMMANDS.items():
                for tree in trees:
                    filled = [a.format(name=next(names)) for a in argv]
                    times.setdefault((command, tree), []).append(run(tree, filled, env)[0])
        heavy = {}
        for command, argv in COMMANDS.items():
            for tree in trees:
                filled = [a.format(name=next(names)) for a in argv]
                stderr = run(tree, filled, env, LOADED)[1]
                loaded = set(json.loads(stderr.strip().splitlines()[-1]))
                heavy[command, tree] = sorted(loaded & set(HEAVY))
    print(f"{args.runs} runs each, median / fastest; `uptime` now: {os.getloadavg()[0]:.2f}")
    for tree in trees:
        print(f"\n{tree}")
        for command in COMMANDS:
            xs = times[command, tree]
            loads = ", ".join(heavy[command, tree]) or "none heavy"
            print(
                f"  pps {command:15s} {statistics.median(xs) * 1000:5.0f} /"
                f" {min(xs) * 1000:4.0f} ms   loads {loads}"
            )


if __name__ == "__main__":
    main()
