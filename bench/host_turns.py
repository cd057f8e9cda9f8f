"""What pps adds to a real agent host's turn: `claude -p` (Claude Code) and `codex exec`
(Codex), the CLIs `make test` installs in tests/hosts, each timed from spawn to exit for
one prompt, without pps's hooks and with the hooks `pps hooks install` writes (a startup
recall, the prompt's recall and capture, the answer's capture). The hosts' model is the
tests' stand-in LLM (tests/stub_llm.py) on 127.0.0.1, so the turn is the host's own work
and pps's, no model's. Against a real `pps serve` (no graph) holding `--events` turns and
a word-photo; timed idle, then beside `--busy` CPU-bound processes. Prints p50 and p95 of
each and what the hooks add at the median. Codex is run with
--dangerously-bypass-hook-trust: a person trusts new hooks in its TUI.

    python bench/host_turns.py [--runs 10] [--busy 4] [--events 200]
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: bench/ingest.py must not shadow `ingest`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import os
import statistics
import subprocess
import tempfile
import time

import httpx

from bench.hooks import busy_beside, percentiles
from pps.process import ServerProcess
from tests.fixtures_ingest import HOST_CLIS, KETTLE, KETTLE_PROMPT, KETTLE_REPLY
from tests.stub_llm import StubLLM

HOSTS = ("claude-code", "codex")


def homes(root: Path, host: str, model: StubLLM, env: dict) -> dict[str, dict]:
    """For one host, the environment of a turn without pps's hooks and of one with them
    (each its own host home, pointed at the stand-in model)."""
    found = {}
    for hooked in (False, True):
        home = root / f"{host}-{'hooks' if hooked else 'plain'}"
        home.mkdir()
        turn_env = {**env, "HOME": str(home)}
        if host == "codex":
            turn_env["CODEX_HOME"] = str(home)
            (home / "config.toml").write_text(
                'model = "stub-model"\nmodel_provider = "stub"\n\n[model_providers.stub]\n'
                f'name = "stub"\nbase_url = "{model.url}"\nwire_api = "responses"\n'
            )
        else:
            turn_env |= {
                "ANTHROPIC_BASE_URL": model.anthropic_url,
                "ANTHROPIC_API_KEY": "sk-stub",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            }
        if hooked:
            installed = subprocess.run(
                [sys.executable, "-m", "pps.cli", "hooks", "install", host, "--user"],
                env=turn_env,
                capture_output=True,
                text=True,
            )
            if installed.returncode != 0:
                raise RuntimeError(f"installing the {host} hooks: {installed.stderr}")
        found["hooks" if hooked else "plain"] = turn_env
    return found


def turn(host: str, env: dict, work: Path) -> float:
    """Seconds one turn takes, spawn to exit; the host must print the model's answer."""
    if host == "codex":
        argv = [
            str(HOST_CLIS / "codex"),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            KETTLE_PROMPT,
        ]
    else:
        argv = [str(HOST_CLIS / "claude"), "-p", KETTLE_PROMPT]
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or KETTLE_REPLY not in done.stdout:
        raise RuntimeError(f"{host} failed ({done.returncode}): {done.stderr[-800:]}")
    return elapsed


def measure(label: str, envs: dict[str, dict[str, dict]], work: Path, runs: int) -> None:
    timed: dict[tuple[str, str], list[float]] = {}
    for _ in range(runs):  # alternated, so a change in the machine's load falls on both
        for host, kinds in envs.items():
            for kind, env in kinds.items():
                timed.setdefault((host, kind), []).append(turn(host, env, work))
    print(f"{label} (load average {os.getloadavg()[0]:.1f}, {runs} turns each)")
    for host in envs:
        plain, hooked = timed[(host, "plain")], timed[(host, "hooks")]
        added = statistics.median(hooked) - statistics.median(plain)
        print(f"  {host:12} without pps  {percentiles(plain)}")
        print(f"  {'':12} with pps     {percentiles(hooked)}   (+{added * 1000:.0f} ms at p50)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--busy", type=int, default=4)
    parser.add_argument("--events", type=int, default=200)
    args = parser.parse_args()
    missing = [name for name in ("claude", "codex") if not (HOST_CLIS / name).exists()]
    if missing:
        sys.exit(f"missing {', '.join(missing)}: npm ci --prefix tests/hosts")
    with tempfile.TemporaryDirectory() as folder, StubLLM() as model:
        root = Path(folder)
        model.turn_reply = KETTLE_REPLY
        server = ServerProcess(root / "data", env={"GRAPH_BACKEND": "none"})
        with server.start(timeout=300):
            token = server.pps("entity", "create", "bench").strip()
            (root / "token").write_text(token + "\n")
            (root / "token").chmod(0o600)
            headers = {"Authorization": f"Bearer {token}"}
            events = [
                {"channel": "discord", "author": "jeff", "content": f"turn {n}: tea at {n % 12}"}
                for n in range(args.events)
            ]
            httpx.post(f"{server.url}/v1/events", json=events, headers=headers, timeout=60)
            httpx.post(f"{server.url}/v1/anchors", json=KETTLE, headers=headers, timeout=60)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PPS_", "CODEX_"))}
            env |= {
                "PPS_URL": server.url,
                "PPS_TOKEN_FILE": str(root / "token"),
                "PPS_CLIENT_DIR": str(root / "client"),
            }
            for name in ("OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDECODE"):
                env.pop(name, None)
            envs = {host: homes(root, host, model, env) for host in HOSTS}
            work = root / "work"
            work.mkdir()
            for host, kinds in envs.items():  # the first of each is not timed
                for kind_env in kinds.values():
                    turn(host, kind_env, work)
            measure("idle", envs, work, args.runs)
            with busy_beside(args.busy):
                measure(f"beside {args.busy} CPU-bound processes", envs, work, args.runs)


if __name__ == "__main__":
    main()
