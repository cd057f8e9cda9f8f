"""The README's walk-through, run as printed: `make run` in one terminal, then every other
shell block of "Five minutes with pps" in order in a second one, as a new user on a fresh
machine (a fresh home and XDG folders). Only the port is changed (a free one for 8000),
and `claude` is a stand-in that records what it was asked (Claude Code is not installed
here)."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
from pathlib import Path

import httpx
import pytest

from pps.process import free_port
from tests.conftest import wait_for

ROOT = Path(__file__).resolve().parent.parent
MARK = "::block::"


def walk_through() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Five minutes with pps", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


@pytest.fixture
def user(tmp_path) -> dict[str, str]:
    """A new user's environment: an empty home, no pps settings, a `claude` stand-in."""
    home = tmp_path / "home"
    bin_dir = tmp_path / "bin"
    for folder in (home, bin_dir):
        folder.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path}/claude.calls"\n')
    claude.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PPS_", "XDG_"))}
    env.update(HOME=str(home), PATH=f"{bin_dir}:{env['PATH']}")
    return env


def test_the_walk_through_runs_as_printed(user, tmp_path, processes):
    blocks = walk_through()
    assert blocks[0].strip() == "make run", "the walk-through starts the service"
    port = free_port()
    blocks = [block.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for block in blocks]
    service = subprocess.Popen(
        ["make", "--no-print-directory", "run"],
        cwd=ROOT,
        env={**user, "PPS_PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: _healthy(port), timeout=120, what="make run to serve")
        script = "set -euo pipefail\n" + "".join(f"echo {MARK}\n{b}" for b in blocks[1:])
        done = subprocess.run(
            ["bash", "-c", script], cwd=ROOT, env=user, capture_output=True, text=True, timeout=120
        )
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        service.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    out = done.stdout.split(MARK + "\n")[1:]
    home = Path(user["HOME"])

    token_file = home / ".config" / "pps" / "lyra.token"
    assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert (home / ".local" / "share" / "pps" / "pps.sqlite3").exists()  # the user's data dir

    posted = json.loads(out[1])
    assert posted == json.loads(re.search(r"# (\{.*\})", blocks[2])[1])  # as the README shows
    found = json.loads(out[2])["results"]
    assert found and "comfy robe" in found[0]["text"]
    startup, moment = documents(out[3])  # curl ends no answer with a newline
    assert "comfy robe" in startup["context"] and "comfy robe" in moment["context"]
    tools = {tool["name"] for tool in json.loads(out[4])["result"]["tools"]}
    assert {"ambient_recall", "store_event"} <= tools
    calls = (tmp_path / "claude.calls").read_text().splitlines()
    assert calls[0].startswith("mcp add --transport http pps") and "mcp --profile pps" in calls[1]
    settings = home / ".claude" / "settings.json"
    hooks = json.loads(settings.read_text())["hooks"]
    assert "UserPromptSubmit" in hooks and "pps" in json.dumps(hooks)
    [prompt] = hooks["UserPromptSubmit"][0]["hooks"]
    assert prompt["type"] == "http" and prompt["url"].endswith("/v1/hooks/claude-code")
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600  # it holds the token


def documents(text: str) -> list:
    """The JSON values printed one after another."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text.rstrip()):
        value, at = decoder.raw_decode(text, at)
        found.append(value)
        at += len(text[at:]) - len(text[at:].lstrip())
    return found


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except httpx.TransportError:
        return False
