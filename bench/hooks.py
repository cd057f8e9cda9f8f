"""The prompt's hook round trip: what every Claude Code prompt waits for, as an http hook
served by the running service (`POST /v1/hooks/claude-code`, a new connection each time,
as Claude Code makes one) and as the command hook (`pps hook UserPromptSubmit`, a new
process), each storing the prompt and answering its recall; and the prompt hooks of Letta
Code and Codex (`pps hook UserPromptSubmit --host letta-code|codex`, commands: neither has
an http hook), fed each host's own payload. Against a real `pps serve`
(no graph) with one entity holding `--events` turns; timed idle, then again beside
`--busy` CPU-bound processes (stopped after the runs). Prints p50 and p95 of each.

    python bench/hooks.py [--runs N] [--busy 4] [--events 500]
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: bench/ingest.py must not shadow `ingest`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator

import httpx

from bench.client_start import PPS, prompt_hook
from pps.process import ServerProcess

SPIN = "while True: pass"


@contextlib.contextmanager
def busy_beside(count: int) -> Iterator[None]:
    """`count` CPU-bound processes running for the length of the block."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def new_connections() -> httpx.Client:
    """A client that opens a new connection for every request and closes it after, as
    Claude Code does for each hook. Built once, as Claude Code's own process is: building
    an httpx client (its TLS context) takes ~20 ms, which is the bench's, not the hook's."""
    return httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))


def http_hook(client: httpx.Client, url: str, token: str, n: int) -> float:
    """Seconds one http hook takes: POST the payload, read the answer."""
    payload = {
        "session_id": "0b7c2f4e-bench-http",
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": "/srv/bench",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": f"What did we decide about the greenhouse sensor release? ({n})",
    }
    started = time.perf_counter()
    answer = client.post(
        f"{url}/v1/hooks/claude-code",
        json=payload,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    elapsed = time.perf_counter() - started
    if "hookSpecificOutput" not in answer.json():
        raise RuntimeError(f"the http hook answered {answer.status_code}: {answer.text[:500]}")
    return elapsed


PROMPT = "What did we decide about the greenhouse sensor release?"
HOST_PAYLOADS: dict[str, dict[str, object]] = {
    "letta-code": {  # Letta Code's UserPromptSubmit input (src/hooks/index.ts)
        "event_type": "UserPromptSubmit",
        "working_directory": "/srv/bench",
        "prompt": PROMPT,
        "is_command": False,
        "agent_id": "agent-0b7c2f4e-bench",
        "conversation_id": "conv-0b7c2f4e-bench",
    },
    "codex": {  # Codex's (its user-prompt-submit command input schema)
        "session_id": "0b7c2f4e-bench-codex",
        "transcript_path": None,
        "cwd": "/srv/bench",
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5.5",
        "permission_mode": "default",
        "turn_id": "turn-bench",
        "prompt": PROMPT,
    },
}


def host_hook(host: str, env: dict, n: int) -> float:
    """Seconds one host's prompt command hook takes from spawn to exit; it must inject."""
    payload = {**HOST_PAYLOADS[host], "prompt": f"{PROMPT} ({n})"}
    started = time.perf_counter()
    done = subprocess.run(
        [*PPS, "hook", "UserPromptSubmit", "--host", host],
        env=env,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.perf_counter() - started
    if "Memory" not in done.stdout:
        raise RuntimeError(f"the {host} hook injected nothing: {done.stderr[:500]}")
    return elapsed


def percentiles(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered) * 1000:7.0f} ms   p95 {p95 * 1000:7.0f} ms"


def measure(label: str, url: str, token: str, env: dict, home: Path, runs: int) -> None:
    with new_connections() as client:
        http = [http_hook(client, url, token, n) for n in range(runs)]
    command = [prompt_hook(env, home)[0] for _ in range(runs)]
    hosts = {host: [host_hook(host, env, n) for n in range(runs)] for host in HOST_PAYLOADS}
    load = os.getloadavg()[0]
    print(f"{label} (load average {load:.1f}, {runs} runs each)")
    print(f"  claude-code http hook     {percentiles(http)}")
    print(f"  claude-code command hook  {percentiles(command)}")
    for host, seconds in hosts.items():
        print(f"  {host + ' command hook':25} {percentiles(seconds)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--busy", type=int, default=4)
    parser.add_argument("--events", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        home = Path(root)
        server = ServerProcess(home / "data", env={"GRAPH_BACKEND": "none"})
        with server.start(timeout=300):  # a busy machine starts it slowly
            token = server.pps("entity", "create", "bench").strip()
            events = [
                {
                    "channel": "terminal",
                    "role": "user" if n % 2 else "assistant",
                    "content": f"turn {n}: the greenhouse sensor reads {n % 37} degrees",
                }
                for n in range(args.events)
            ]
            headers = {"Authorization": f"Bearer {token}"}
            httpx.post(f"{server.url}/v1/events", json=events, headers=headers, timeout=60)
            env = {
                **server.env,
                "PPS_URL": server.url,
                "PPS_TOKEN": token,
                "PPS_CLIENT_DIR": str(home / "client"),
            }
            env.pop("PPS_TOKEN_FILE", None)
            prompt_hook(env, home)  # the first of each is not timed
            with new_connections() as client:
                http_hook(client, server.url, token, -1)
            measure("idle", server.url, token, env, home, args.runs)
            with busy_beside(args.busy):
                label = f"beside {args.busy} CPU-bound processes"
                measure(label, server.url, token, env, home, args.runs)


if __name__ == "__main__":
    main()
