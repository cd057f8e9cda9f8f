"""Docker Compose's stack from a fresh copy of the checkout to both services healthy, as
the README starts it (`docker compose up -d --build --wait`), idle and beside CPU-bound
processes: with the image's layers cached, a restart (`docker compose restart pps` to
healthy), and with --cold the image built from nothing first (that removes the image and
clears the engine's whole build cache).

Run: .venv/bin/python bench/stack.py [--samples N] [--busy N] [--cold]

Needs a Docker engine and compose 2.24+ (tests/containers/setup). Prints the seconds of
each sample and their median per phase, and the busy/idle ratio; asserts nothing. The
stack is taken down with its volumes at the end; the built image is kept.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Run as `python bench/stack.py`: the repository and tests/ (what tests/test_stack.py
# imports) on the path, and not bench/ itself, whose ingest.py would shadow the package.
ROOT = Path(__file__).resolve().parent.parent
sys.path[0:1] = [str(ROOT), str(ROOT / "tests")]

from bench.hooks import busy_beside  # noqa: E402
from pps.process import free_port  # noqa: E402
from tests.test_stack import compose_env, engine_problem, fresh_checkout, set_lines  # noqa: E402

IMAGE = "pps-test-stack-pps"


def compose(folder: Path, *args: str) -> None:
    subprocess.run(
        ["docker", "compose", *args],
        cwd=folder,
        env=compose_env(),
        check=True,
        capture_output=True,
        timeout=1800,
    )


def timed(folder: Path, *args: str) -> float:
    started = time.monotonic()
    compose(folder, *args)
    return time.monotonic() - started


def phase(folder: Path, samples: int, cold: bool) -> dict[str, list[float]]:
    took: dict[str, list[float]] = {"cold": [], "cached": [], "restart": []}
    for i in range(samples):
        compose(folder, "down", "--volumes", "--remove-orphans")
        if cold and i == 0:
            subprocess.run(["docker", "rmi", "-f", IMAGE], capture_output=True)
            subprocess.run(["docker", "builder", "prune", "-af"], capture_output=True)
        kind = "cold" if cold and i == 0 else "cached"
        took[kind].append(timed(folder, "up", "-d", "--build", "--wait"))
        took["restart"].append(timed(folder, "restart", "pps") + timed(folder, "up", "--wait"))
    compose(folder, "down", "--volumes", "--remove-orphans")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--busy", type=int, default=4, help="CPU-bound processes beside")
    parser.add_argument("--cold", action="store_true", help="build the image from nothing")
    args = parser.parse_args()
    if problem := engine_problem():
        raise SystemExit(problem)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        fresh_checkout(folder)
        (folder / ".env").write_text((folder / ".env.example").read_text())
        set_lines(
            folder / ".env",
            {
                "NEO4J_PASSWORD": "bench-stack-password",
                "PPS_PORT": str(free_port()),
                "NEO4J_HTTP_PORT": str(free_port()),
                "NEO4J_BOLT_PORT": str(free_port()),
            },
        )
        idle = phase(folder, args.samples, args.cold)
        with busy_beside(args.busy):
            busy = phase(folder, args.samples, args.cold)
    print(f"seconds, idle and beside {args.busy} CPU-bound processes:")
    for name in (name for name in idle if idle[name]):
        a, b = statistics.median(idle[name]), statistics.median(busy[name])
        print(
            f"  {name:8} to healthy: idle {a:5.1f} ({' '.join(f'{s:.0f}' for s in idle[name])})"
            f"  busy {b:5.1f} ({' '.join(f'{s:.0f}' for s in busy[name])})  ratio {b / a:.2f}"
        )


if __name__ == "__main__":
    main()
