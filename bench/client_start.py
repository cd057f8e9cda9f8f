"""Client start-up: how long the commands a client spawns take before they answer.

`pps mcp` is spawned by MCP clients (Claude Code) at session start and must answer
`initialize` quickly; `pps hook UserPromptSubmit` runs before every prompt is sent, so its
whole run is latency the user waits through. Both run against a real `pps serve` (no
graph) with one entity. Prints the median and p90 of N runs, then the ten imports with the
largest cumulative time in each (`python -X importtime`), which is where the time goes.

    python bench/client_start.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pps.process import ServerProcess

PPS = [sys.executable, "-m", "pps.cli"]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}


def mcp_initialize(env: dict[str, str], url: str, python: list[str] = PPS) -> tuple[float, str]:
    """Seconds from spawning `pps mcp` to its answer to `initialize`, and its stderr."""
    # stderr goes to a file: -X importtime writes more than a pipe holds before the answer.
    with tempfile.TemporaryFile("w+") as errors:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [*python, "mcp", "--profile", "pps", "--url", url],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        proc.stdin.write(json.dumps(INITIALIZE) + "\n")
        proc.stdin.flush()
        answer = proc.stdout.readline()
        elapsed = time.perf_counter() - started
        proc.stdin.close()
        proc.wait(timeout=30)
        errors.seek(0)
        stderr = errors.read()
    if "result" not in json.loads(answer or "{}"):
        raise RuntimeError(f"pps mcp did not initialize: {answer!r} {stderr[-2000:]}")
    return elapsed, stderr


def prompt_hook(env: dict[str, str], home: Path, python: list[str] = PPS) -> tuple[float, str]:
    """Seconds `pps hook UserPromptSubmit` takes from spawn to exit, and its stderr."""
    payload = {
        "session_id": "0b7c2f4e-bench",
        "transcript_path": str(home / "transcript.jsonl"),
        "cwd": str(home),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "What did we decide about the greenhouse sensor release?",
    }
    started = time.perf_counter()
    done = subprocess.run(
        [*python, "hook", "UserPromptSubmit"],
        env=env,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return time.perf_counter() - started, done.stderr


def summary(name: str, seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return (
        f"{name:28} median {statistics.median(ordered) * 1000:7.0f} ms"
        f"   p90 {p90 * 1000:7.0f} ms   ({len(ordered)} runs)"
    )


def top_imports(importtime: str, n: int = 10) -> list[str]:
    """The `n` imports with the largest cumulative time in `-X importtime` output."""
    rows = []
    for line in importtime.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|")
        rows.append((int(cumulative), name.rstrip()))
    rows.sort(reverse=True)
    return [f"  {us / 1000:7.1f} ms  {name}" for us, name in rows[:n]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        home = Path(root)
        with ServerProcess(home / "data", env={"GRAPH_BACKEND": "none"}) as server:
            token = server.pps("entity", "create", "bench").strip()
            env = {
                **server.env,
                "PPS_URL": server.url,
                "PPS_TOKEN": token,
                "PPS_CLIENT_DIR": str(home / "client"),
            }
            env.pop("PPS_TOKEN_FILE", None)
            prompt_hook(env, home)  # the first capture opens the entity's session: not timed
            mcp = [mcp_initialize(env, server.url)[0] for _ in range(args.runs)]
            hook = [prompt_hook(env, home)[0] for _ in range(args.runs)]
            print(summary("pps mcp -> initialize", mcp))
            print(summary("pps hook UserPromptSubmit", hook))
            timed = [sys.executable, "-X", "importtime", "-m", "pps.cli"]
            for title, (_, stderr) in (
                ("pps mcp", mcp_initialize(env, server.url, timed)),
                ("pps hook UserPromptSubmit", prompt_hook(env, home, timed)),
            ):
                print(f"\n{title}: the ten largest cumulative imports")
                print("\n".join(top_imports(stderr)))


if __name__ == "__main__":
    main()
