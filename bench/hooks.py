"""Every installed hook of every host, run as the host runs it: what `pps hooks install
claude-code|codex|letta-code --project DIR` wrote, each command hook spawned through
`sh -c` with that host's own payload on stdin (the hook client, ingest/hook.py), and
Claude Code's http hook POSTed to its url with its headers on a new connection, as Claude
Code does. Every event of each host (SessionStart, UserPromptSubmit, Stop, PreCompact,
SessionEnd), each storing what it stores and answering what it answers, against a real
`pps serve` (no graph) with one entity holding `--events` turns.

Timed idle, then beside `--busy` CPU-bound processes (default: twice the cores), then,
with `--heavy N`, beside N of them (a household at a load of 20). Prints p50, p95 and the
worst of each hook, and how many ran past the host's timeout (the settings file's);
asserts nothing. Compare ratios across machines, not milliseconds.

    python bench/hooks.py [--runs 20] [--busy 4] [--heavy 20] [--events 500]
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
import uuid
from collections.abc import Iterator

import httpx

from pps.process import ServerProcess

SPIN = "while True: pass"
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd")
PROMPT = "What did we decide about the greenhouse sensor release?"


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


def percentiles(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"p50 {statistics.median(ordered) * 1000:6.0f} ms   p95 {p95 * 1000:6.0f} ms"
        f"   worst {ordered[-1] * 1000:6.0f} ms"
    )


class Session:
    """One session of one host: its payloads, and for Claude Code a transcript that grows
    a turn before each Stop, as Claude Code's does."""

    def __init__(self, host: str, folder: Path):
        self.host, self.folder, self.id = host, folder, f"bench-{uuid.uuid4()}"
        self.transcript = folder / f"{self.id}.jsonl"
        self.turn = 0

    def payload(self, event: str) -> dict[str, object]:
        self.turn += event == "UserPromptSubmit"
        prompt = f"{PROMPT} ({self.turn})"
        answer = f"We ship it on Friday ({self.turn})."
        if self.host == "letta-code":  # Letta Code's inputs (src/hooks/index.ts)
            fields = {
                "SessionStart": {"is_new_session": True, "agent_name": "bench"},
                "UserPromptSubmit": {"prompt": prompt, "is_command": False},
                "Stop": {"stop_reason": "end_turn", "assistant_message": answer},
                "PreCompact": {"context_length": 1000},
                "SessionEnd": {"duration_ms": 1000},
            }[event]
            if event == "Stop":
                fields["user_message"] = prompt
            else:
                fields.update(agent_id="agent-bench", conversation_id=self.id)
            return {"event_type": event, "working_directory": str(self.folder), **fields}
        common = {
            "session_id": self.id,
            "cwd": str(self.folder),
            "hook_event_name": event,
            "permission_mode": "default",
        }
        if self.host == "codex":  # Codex's command input schemas
            fields = {
                "SessionStart": {"source": "startup"},
                "UserPromptSubmit": {"prompt": prompt, "turn_id": f"t{self.turn}"},
                "Stop": {"turn_id": f"t{self.turn}", "last_assistant_message": answer},
                "PreCompact": {"turn_id": f"t{self.turn}", "trigger": "auto"},
                "SessionEnd": {"reason": "exit"},
            }[event]
            return {**common, "transcript_path": None, "model": "gpt-5.5", **fields}
        if event == "Stop":
            self._write("user", prompt)
            self._write("assistant", [{"type": "text", "text": answer}])
        fields = {
            "SessionStart": {"source": "startup"},
            "UserPromptSubmit": {"prompt": prompt},
            "Stop": {"stop_hook_active": False},
            "PreCompact": {"trigger": "auto", "custom_instructions": ""},
            "SessionEnd": {"reason": "other"},
        }[event]
        return {**common, "transcript_path": str(self.transcript), **fields}

    def _write(self, role: str, content: object) -> None:
        record = {
            "type": role,
            "uuid": str(uuid.uuid4()),
            "sessionId": self.id,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "cwd": str(self.folder),
            "message": {"role": role, "content": content},
        }
        with open(self.transcript, "a") as file:
            file.write(json.dumps(record) + "\n")


def installed(host: str, project: Path, env: dict[str, str]) -> dict[str, dict]:
    """The hooks `pps hooks install HOST --project DIR` wrote, by event."""
    subprocess.run(
        [sys.executable, "-m", "pps.cli", "hooks", "install", host, "--project", str(project)],
        env=env,
        check=True,
        capture_output=True,
    )
    name = {
        "claude-code": ".claude/settings.local.json",
        "codex": ".codex/hooks.json",
        "letta-code": ".letta/settings.local.json",
    }[host]
    settings = json.loads((project / name).read_text())
    return {event: settings["hooks"][event][-1]["hooks"][0] for event in EVENTS}


def run(hook: dict, payload: dict, env: dict, host: str) -> tuple[float, float]:
    """(seconds the hook took, the host's timeout for it in seconds)."""
    started = time.perf_counter()
    if hook["type"] == "http":
        with httpx.Client() as http:  # a new connection, as Claude Code makes one
            http.post(hook["url"], json=payload, headers=hook["headers"], timeout=30)
    else:
        subprocess.run(
            ["sh", "-c", hook["command"]],
            input=json.dumps(payload),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    timeout = hook["timeout"] / (1000 if host == "letta-code" else 1)
    return time.perf_counter() - started, timeout


def measure(label: str, hooks: dict, work: Path, env: dict, runs: int) -> None:
    taken: dict[tuple[str, str], list[float]] = {}
    late = dict.fromkeys(hooks, 0)
    for host, by_event in hooks.items():
        for _ in range(runs):
            session = Session(host, work)
            for event in EVENTS:
                seconds, timeout = run(by_event[event], session.payload(event), env, host)
                taken.setdefault((host, event), []).append(seconds)
                late[host] += seconds > timeout
    # the load as the phase ends: a minute's average lags behind the processes started
    print(f"{label} (load average {os.getloadavg()[0]:.1f} at its end, {runs} sessions each)")
    for host, by_event in hooks.items():
        for event in EVENTS:
            kind = by_event[event]["type"]
            print(f"  {host:12} {event:17} {kind:8} {percentiles(taken[(host, event)])}")
        print(f"  {host:12} past the host's timeout: {late[host]} of {runs * len(EVENTS)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--busy", type=int, default=2 * (os.cpu_count() or 1))
    parser.add_argument("--heavy", type=int, default=0)
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
            token_file = home / "token"
            token_file.write_text(token)
            token_file.chmod(0o600)
            env = {
                **{k: v for k, v in server.env.items() if not k.startswith("PPS_")},
                "HOME": str(home),
                "PPS_URL": server.url,
                "PPS_TOKEN_FILE": str(token_file),
                "PPS_CLIENT_DIR": str(home / "client"),
            }
            hooks = {}
            for host in ("claude-code", "codex", "letta-code"):
                project = home / host
                project.mkdir()
                hooks[host] = installed(host, project, env)
            work = home / "work"
            work.mkdir()
            measure("warm-up", hooks, work, env, 1)
            measure("idle", hooks, work, env, args.runs)
            with busy_beside(args.busy):
                measure(f"beside {args.busy} CPU-bound processes", hooks, work, env, args.runs)
            if args.heavy:
                with busy_beside(args.heavy):
                    label = f"beside {args.heavy} CPU-bound processes"
                    measure(label, hooks, work, env, args.runs)


if __name__ == "__main__":
    main()
