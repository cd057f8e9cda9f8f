"""Helpers for the ingest tests: run `pps` as a client would, read back what the service
stored, and write Claude Code transcripts shaped like the real ones (generated, not
committed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from tests.conftest import unless_required

ROOT = Path(__file__).resolve().parents[2]
HOST_CLIS = ROOT / "tests" / "hosts" / "node_modules" / ".bin"
"""The agent hosts' own CLIs (`npm ci --prefix tests/hosts`, which `make test` runs)."""


def host_cli(name: str) -> Path:
    """An agent host's own CLI (`codex`, `claude`). Without it a test skips, except under
    PPS_REQUIRE_HOSTS=1 (CI), where it fails."""
    found = HOST_CLIS / name
    missing = f"the {name} CLI is not installed at {found} (npm ci --prefix tests/hosts)"
    unless_required(None if found.exists() else missing, "PPS_REQUIRE_HOSTS")
    return found


# A real host's turn (tests/test_hooks_codex.py, tests/test_hooks_install.py): a memory the
# prompt's recall finds, the prompt, and what the stand-in model answers.
KETTLE = {"title": "Kettle", "content": "The kettle by the window is cobalt blue."}
KETTLE_PROMPT = "What colour is the kettle?"
KETTLE_REPLY = "It is cobalt blue, by the window."


def assert_host_turn(client: httpx.Client, sent: str, channel: str) -> None:
    """What a real host's turn must show: the memory pps recalled reached the model with
    the prompt (`sent`: the model's input, as JSON), and once the hooks have stored them
    (waited for, bounded), the prompt and the answer, once each, in `channel`, in one
    session."""
    from tests.conftest import wait_for

    assert KETTLE_PROMPT in sent
    assert "# Memory" in sent and "cobalt blue" in sent  # what the prompt's hook recalled

    def both() -> list[dict] | None:
        found = [e for e in all_events(client) if e["event_type"] == "message"]
        return found if len(found) == 2 else None

    messages = wait_for(both, 30, "the turn's prompt and answer")
    assert [(e["role"], e["content"].strip()) for e in messages] == [
        ("user", KETTLE_PROMPT),
        ("assistant", KETTLE_REPLY),
    ]
    assert {e["channel"] for e in messages} == {channel}
    assert len({e["session_id"] for e in messages}) == 1


def token_of(client: httpx.Client) -> str:
    return client.headers["Authorization"].split()[1]


def client_env(url: str, token: str, home: Path, **extra: str) -> dict[str, str]:
    """The environment of a client process: the service, a 0600 token file, its own
    client dir; nothing inherited that would point elsewhere."""
    home.mkdir(parents=True, exist_ok=True)
    token_file = home / "token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PPS_")}
    env.update(
        PPS_URL=url,
        PPS_TOKEN_FILE=str(token_file),
        PPS_CLIENT_DIR=str(home / "client"),
        PYTHONPATH=str(ROOT),
        **extra,
    )
    return env


def pps(*args: str, env: dict[str, str], stdin: bytes | str | None = None, cwd: Path | None = None):
    """Run `pps ARGS` as a child process; returns the CompletedProcess (text output)."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    done = subprocess.run(
        [sys.executable, "-m", "pps.cli", *args],
        input=data,
        capture_output=True,
        env=env,
        cwd=cwd or (Path(env["PPS_CLIENT_DIR"]).parent if "PPS_CLIENT_DIR" in env else ROOT),
        timeout=120,
    )
    done.stdout, done.stderr = done.stdout.decode(), done.stderr.decode()
    return done


HOOK_CLIENT = [sys.executable, "-I", "-S", str(ROOT / "ingest" / "hook.py")]
"""The hook client as the installed hooks run it (ingest.claude_settings.client_command)."""


def run_hook(event: str, *args: str, env: dict[str, str], stdin: bytes | str | None = None):
    """Run the hook client for `event` (`--host H` in `args`) as a host runs it: a child
    process, the host's payload on stdin; the CompletedProcess (text output)."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    done = subprocess.run(
        [*HOOK_CLIENT, event, *args], input=data, capture_output=True, env=env, timeout=60
    )
    done.stdout, done.stderr = done.stdout.decode(), done.stderr.decode()
    return done


def all_events(client: httpx.Client, **filters) -> list[dict]:
    """Every event of the client's entity, oldest first."""
    found, cursor = [], None
    while True:
        params = {"order": "oldest", "limit": 1000, **filters}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/v1/events", params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        found += body["events"]
        cursor = body["next_cursor"]
        if cursor is None:
            return found


class Transcript:
    """A Claude Code session transcript, one JSONL record a line, as Claude Code writes
    them: user prompts, assistant text and tool calls, tool results, and the lines that are
    not turns (summaries, system lines, sidechains, meta, slash-command plumbing)."""

    def __init__(self, path: Path, session: str | None = None, cwd: str = "/srv/jeff/pps"):
        self.path = path
        self.session = session or str(uuid.uuid4())
        self.cwd = cwd
        self.moment = datetime.now(UTC) - timedelta(seconds=1)
        self.parent: str | None = None
        self.records: dict[str, dict] = {}
        """Every line written, by uuid."""
        self.turns: list[tuple[str, str]] = []
        """(role, text) of every turn written, in order."""

    def _write(self, record: dict) -> str:
        """Stamped with the real time, as Claude Code does (after any hook that ran)."""
        self.moment = max(datetime.now(UTC), self.moment + timedelta(milliseconds=1))
        line_uuid = str(uuid.uuid4())
        base = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.0.14",
            "gitBranch": "main",
            "uuid": line_uuid,
            "timestamp": self.moment.isoformat().replace("+00:00", "Z"),
        }
        self.parent = line_uuid
        self.records[line_uuid] = {**base, **record}
        with open(self.path, "a") as file:
            file.write(json.dumps(self.records[line_uuid]) + "\n")
        return line_uuid

    def user(self, text: str) -> str:
        self.turns.append(("user", text))
        return self._write({"type": "user", "message": {"role": "user", "content": text}})

    def assistant(self, text: str) -> str:
        self.turns.append(("assistant", text))
        message = {
            "id": f"msg_{uuid.uuid4().hex[:20]}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": text}],
            "stop_reason": None,
            "usage": {"input_tokens": 12, "output_tokens": 30},
        }
        return self._write({"type": "assistant", "message": message, "requestId": "req_1"})

    def tool_round(self) -> None:
        """A tool call and its result: neither is a turn."""
        call_id = f"toolu_{uuid.uuid4().hex[:12]}"
        use = {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}
        self._write({"type": "assistant", "message": {"role": "assistant", "content": [use]}})
        result = {"type": "tool_result", "tool_use_id": call_id, "content": "README.md"}
        self._write({"type": "user", "message": {"role": "user", "content": [result]}})

    def noise(self) -> None:
        """Lines that are not turns, of the kinds real transcripts hold."""
        with open(self.path, "a") as file:
            file.write(json.dumps({"type": "summary", "summary": "Setup", "leafUuid": "x"}) + "\n")
        self._write({"type": "system", "subtype": "stop_hook_summary", "hookCount": 1})
        self._write(
            {"type": "user", "isMeta": True, "message": {"role": "user", "content": "Caveat"}}
        )
        self._write(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": "<command-name>/clear</command-name><command-args></command-args>",
                },
            }
        )
        self._write(
            {
                "type": "assistant",
                "isSidechain": True,
                "message": {"role": "assistant", "content": [{"type": "text", "text": "agent"}]},
            }
        )

    def payload(self, event: str, **fields) -> str:
        """The JSON Claude Code pipes into a hook for this session."""
        body = {
            "session_id": self.session,
            "transcript_path": str(self.path),
            "cwd": self.cwd,
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }
        return json.dumps(body)


def summary_counts(output: str) -> dict[str, int]:
    """The counts an import prints: {'imported': 12, 'duplicates': 0, 'skipped': 1, ...}."""
    counts = {}
    for line in output.splitlines():
        words = line.split()
        if line.startswith("  ") and len(words) >= 2:
            name = " ".join(words[:2]) if words[0] == "not" else words[0]
            number = words[2] if words[0] == "not" else words[1]
            if number.replace(",", "").isdigit():
                counts[name] = int(number.replace(",", ""))
    return counts
