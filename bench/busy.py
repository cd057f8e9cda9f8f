"""A real `pps serve` on an idle machine and again on a busy one: what an agent's user
notices (the prompt hook, search, recall, `pps doctor`, a restart) while other programs
keep every core busy, as the agents pps serves do.

Run: .venv/bin/python bench/busy.py [--turns N] [--samples N] [--hogs N] [--phase-s S]

One entity with a few hundred turns, word-photos and fragments. Each phase measures, in
this order: serve start to the first `/health` answer (and to `ok`, everything loaded);
the Claude Code UserPromptSubmit hook as `pps hooks install claude-code --project DIR`
installed it (a command hook is run through `sh -c` with the hook's JSON on stdin, an
http hook is POSTed to its url with its headers on a new connection, as Claude Code
does); `/v1/search` (with the reranker); `/v1/recall`; `pps doctor`; then a restart with
`PPS_SEARCH_RERANK=0` (a second start sample) and `/v1/search` without the reranker.
The busy phase runs the same beside --hogs CPU-bound processes (default: twice the
cores), each of which ends by itself after --phase-s seconds and is killed at the end
whatever happens; a phase samples for at most --phase-s seconds besides its two starts.

Prints p50 and p95 (ms) per operation, idle and busy, the busy/idle ratio of the p50s,
and how many calls failed (a hook past the timeout its settings give it is one: Claude
Code would have stopped waiting); asserts nothing. Compare ratios across machines, not milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from bench.load import WORDS, sentence
from pps.process import ServerProcess, free_port

console = Console(width=130)
HOG = (
    "import sys, time\n"
    "end = time.monotonic() + float(sys.argv[1])\n"
    "while time.monotonic() < end:\n"
    "    pass\n"
)
"""A CPU-bound process that ends by itself after argv[1] seconds."""
OPERATIONS = [
    "serve start to /health",
    "serve start to ok",
    "hook UserPromptSubmit",
    "/v1/search (reranker)",
    "/v1/search (no reranker)",
    "/v1/recall",
    "pps doctor",
]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Phase:
    def __init__(self, name: str, seconds: float):
        self.name = name
        self.seconds = seconds
        self.deadline = 0.0
        self.ms: dict[str, list[float]] = {op: [] for op in OPERATIONS}
        self.failed: dict[str, int] = {}
        self.load = float("nan")  # the 1-minute load average at the phase's end

    def begin(self, share: float) -> None:
        """Sample for at most this share of the phase's seconds (starts are not counted)."""
        self.deadline = time.monotonic() + self.seconds * share

    def left(self) -> bool:
        return time.monotonic() < self.deadline

    def time(self, op: str, call) -> None:
        """Time one call; one that fails (a hook past its timeout, an error) is counted
        as failed, not timed."""
        started = time.perf_counter()
        try:
            call()
        except (subprocess.SubprocessError, httpx.HTTPError) as exc:
            self.failed[op] = self.failed.get(op, 0) + 1
            console.print(f"{self.name}: {op} failed: {str(exc)[:120]}")
            return
        self.ms[op].append((time.perf_counter() - started) * 1000)


def _ok(response: httpx.Response) -> None:
    response.raise_for_status()


def start(data_dir: Path, port: int, env: dict, phase: Phase) -> ServerProcess:
    """A server on the data dir, timed from the command to the first /health answer and
    to /health `ok` (every part loaded)."""
    server = ServerProcess(data_dir, port, env=env)
    began = time.perf_counter()
    server.start(timeout=300, loaded=False)
    phase.ms["serve start to /health"].append((time.perf_counter() - began) * 1000)
    while httpx.get(f"{server.url}/health", timeout=30).json()["status"] == "starting":
        time.sleep(0.05)  # polling the server's own word, as `pps doctor` would
    phase.ms["serve start to ok"].append((time.perf_counter() - began) * 1000)
    return server


def populate(url: str, token: str, turns: int, rng: random.Random) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        for first in range(0, turns, 100):
            batch = [
                {
                    "event_uid": f"turn-{i}",
                    "channel": "terminal",
                    "event_type": "user" if i % 2 == 0 else "assistant",
                    "content": sentence(rng, 20),
                    "created_at": f"2026-11-{1 + i // 200:02}T{(i // 10) % 24:02}:{i % 60:02}:00Z",
                }
                for i in range(first, min(first + 100, turns))
            ]
            client.post("/v1/events", json=batch).raise_for_status()
        for i in range(20):
            title = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}"
            client.post(
                "/v1/anchors", json={"title": title, "content": sentence(rng, 60)}
            ).raise_for_status()
        for _ in range(20):
            client.post(
                "/v1/fragments",
                json={"text": sentence(rng, 40), "category": "work", "tags": [rng.choice(WORDS)]},
            ).raise_for_status()
        began = time.monotonic()
        while time.monotonic() - began < 300:
            stats = client.get("/v1/search/index").json()
            if stats["vectors"] >= stats["chunks"]:
                return
            time.sleep(0.5)


def hook_runner(project: Path, env: dict):
    """The UserPromptSubmit hook as the installed settings say to call it."""
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    hook = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    payload = {
        "session_id": "bench-session",
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
        "hook_event_name": "UserPromptSubmit",
    }

    if hook["type"] == "http":
        allowed = set(hook.get("allowedEnvVars", []))

        def expand(value: str) -> str:
            for name in allowed:
                value = value.replace(f"${{{name}}}", env.get(name, "")).replace(
                    f"${name}", env.get(name, "")
                )
            return value

        headers = {k: expand(v) for k, v in hook.get("headers", {}).items()}
        # A new connection for every request, closed after, as Claude Code makes for each
        # hook; the client built once, as Claude Code's own process is.
        client = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))

        def run(prompt: str) -> None:
            client.post(
                hook["url"],
                json={**payload, "prompt": prompt},
                headers=headers,
                timeout=hook.get("timeout", 60),
            ).raise_for_status()

        return run

    def run(prompt: str) -> None:
        subprocess.run(
            ["sh", "-c", hook["command"]],
            input=json.dumps({**payload, "prompt": prompt}),
            capture_output=True,
            text=True,
            env=env,
            timeout=hook.get("timeout", 60),
            check=True,
        )

    return run


def measure(
    phase: Phase, data_dir: Path, project: Path, token: str, args, env: dict, first=None
) -> None:
    """The phase's figures; `first(url)` runs once its first server is up (not timed)."""
    port = args.port
    rng = random.Random(7)
    headers = {"Authorization": f"Bearer {token}"}
    hook = hook_runner(project, env)
    server = start(data_dir, port, env, phase)
    try:
        if first is not None:
            first(server.url)
        with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
            doctor = [sys.executable, "-m", "pps.cli", "doctor", "--data-dir", str(data_dir)]
            phase.begin(0.75)
            for n in range(args.samples):
                if not phase.left():
                    break
                query = f"{rng.choice(WORDS)} {rng.choice(WORDS)}"
                phase.time("hook UserPromptSubmit", lambda q=query, n=n: hook(f"{q} {n}?"))
                search = {"query": query, "tiers": "all"}
                phase.time(
                    "/v1/search (reranker)", lambda s=search: client.post("/v1/search", json=s)
                )
                recall = {"context": query}
                phase.time("/v1/recall", lambda r=recall: _ok(client.post("/v1/recall", json=r)))
                phase.time(
                    "pps doctor",
                    lambda: subprocess.run(doctor, env=env, capture_output=True, timeout=120),
                )
    finally:
        server.stop()
    server = start(data_dir, port, {**env, "PPS_SEARCH_RERANK": "0"}, phase)
    try:
        with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
            phase.begin(0.25)
            for _ in range(args.samples):
                if not phase.left():
                    break
                search = {"query": f"{rng.choice(WORDS)} {rng.choice(WORDS)}", "tiers": "all"}
                phase.time(
                    "/v1/search (no reranker)",
                    lambda s=search: _ok(client.post("/v1/search", json=s)),
                )
    finally:
        server.stop()
    phase.load = os.getloadavg()[0]


def main() -> None:
    cores = os.cpu_count() or 2
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--hogs", type=int, default=2 * cores, help="default: 2x the cores")
    parser.add_argument("--phase-s", type=float, default=60.0, help="sampling per phase")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    args.port = args.port or free_port()

    work = Path(tempfile.mkdtemp(prefix="pps-busy-"))
    data_dir, project = work / "data", work / "project"
    project.mkdir()
    env = {**os.environ, "GRAPH_BACKEND": "falkordb", "GRAPH_URL": "", "LLM_PROVIDER": "none"}
    env["PPS_PORT"] = str(args.port)
    pps = [sys.executable, "-m", "pps.cli"]
    token = subprocess.run(
        [*pps, "entity", "create", "bench", "--data-dir", str(data_dir)],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    token_file = work / "bench.token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    subprocess.run(
        [*pps, "hooks", "install", "claude-code", "--project", str(project),
         "--token-file", str(token_file), "--port", str(args.port)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    hook = json.loads((project / ".claude" / "settings.local.json").read_text())
    form = hook["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    shown = form.get("url") or form.get("command", "")
    console.print(f"hook: {form['type']} {shlex.split(shown)[-2:] if 'command' in form else shown}")

    def corpus(url: str) -> None:
        populate(url, token, args.turns, random.Random(1))
        console.print(f"corpus: {args.turns} turns, 20 word-photos, 20 fragments; {cores} cores")

    idle = Phase("idle", args.phase_s)
    measure(idle, data_dir, project, token, args, env, first=corpus)
    hogs = []
    try:
        for _ in range(args.hogs):
            hogs.append(subprocess.Popen([sys.executable, "-c", HOG, str(args.phase_s + 300)]))
        time.sleep(1)  # let the scheduler see them
        busy = Phase(f"busy ({args.hogs} CPU-bound processes)", args.phase_s)
        measure(busy, data_dir, project, token, args, env)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()

    title = (
        f"pps beside idle and busy cores (load average {idle.load:.1f} idle, {busy.load:.1f} busy)"
    )
    table = Table(title=title)
    columns = ("operation", "idle p50", "idle p95", "busy p50", "busy p95", "busy/idle", "n")
    for column in (*columns, "failed"):
        table.add_column(column, justify="left" if column == "operation" else "right")
    for op in OPERATIONS:
        a, b = idle.ms[op], busy.ms[op]
        ratio = statistics.median(b) / statistics.median(a) if a and b else float("nan")
        table.add_row(
            op,
            f"{pct(a, 0.5):.0f}",
            f"{pct(a, 0.95):.0f}",
            f"{pct(b, 0.5):.0f}",
            f"{pct(b, 0.95):.0f}",
            f"{ratio:.1f}x",
            f"{len(a)}/{len(b)}",
            f"{idle.failed.get(op, 0)}/{busy.failed.get(op, 0)}",
        )
    console.print(table)


if __name__ == "__main__":
    main()
