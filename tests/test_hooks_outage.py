"""Nothing lost, nothing twice, through the hook client (ingest/hook.py) of every host: the
service stopped for three prompts and their answers, then started; the next hook sends
what waited, in order, and each turn is stored once. And spooled calls sent twice store
nothing new."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.conftest import AppServer, create_entity
from tests.fixtures_ingest import Transcript, all_events, client_env, run_hook

HOSTS = ("claude-code", "codex", "letta-code")


class Turns:
    """One session of `host`: the payloads the host sends for each hook, and the turns
    (role, text) said in it."""

    def __init__(self, host: str, folder):
        self.host, self.id = host, f"outage-{uuid.uuid4()}"
        self.transcript = Transcript(folder / f"{self.id}.jsonl", session=self.id)
        self.turns: list[tuple[str, str]] = []
        self.n = 0

    def payload(self, event: str, **fields) -> str:
        if self.host == "letta-code":
            base: dict = {"event_type": event, "working_directory": "/srv/outage"}
            if event != "Stop":
                base |= {"agent_id": "agent-outage", "conversation_id": self.id}
            return json.dumps({**base, **fields})
        base = {"session_id": self.id, "cwd": "/srv/outage", "hook_event_name": event}
        if self.host == "codex":
            base |= {"transcript_path": None, "turn_id": f"turn-{self.n}"}
        else:
            base["transcript_path"] = str(self.transcript.path)
        return json.dumps({**base, **fields})

    def prompt(self, text: str) -> str:
        self.n += 1
        self.turns.append(("user", text))
        return self.payload("UserPromptSubmit", prompt=text)

    def answer(self, text: str) -> str:
        self.turns.append(("assistant", text))
        if self.host == "claude-code":  # the turn reaches the transcript before Stop
            self.transcript.user(self.turns[-2][1])
            self.transcript.assistant(text)
            return self.payload("Stop", stop_hook_active=False)
        if self.host == "codex":
            return self.payload("Stop", last_assistant_message=text)
        return self.payload("Stop", assistant_message=text, user_message=self.turns[-2][1])


def hook(env: dict, host: str, event: str, stdin: str):
    done = run_hook(event, "--host", host, env=env, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return done


def messages(url: str, token: str) -> list[tuple[str, str]]:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as api:
        return [
            (e["role"], e["content"].strip())
            for e in all_events(api)
            if e["event_type"] == "message"
        ]


@pytest.mark.parametrize("host", HOSTS)
def test_three_prompts_while_the_service_is_down_are_each_stored_once_when_it_is_back(
    host, tmp_path, processes
):
    server = AppServer(tmp_path / "data").start()
    try:
        token = create_entity(server.data_dir, "lyra")
        env = client_env(server.url, token, tmp_path, PPS_HOOK_BUDGET_S="20")
        turns = Turns(host, tmp_path)
        server.stop()

        hook(env, host, "SessionStart", turns.payload("SessionStart", source="startup"))
        for n in range(3):
            done = hook(env, host, "UserPromptSubmit", turns.prompt(f"message {n}, pps down"))
            assert done.stdout == ""  # no memory to give, and nothing else said
            hook(env, host, "Stop", turns.answer(f"answer {n}"))
        [spool] = (tmp_path / "client").glob("hooks-*.jsonl")
        assert spool.stat().st_mode & 0o777 == 0o600
        assert len(spool.read_text().splitlines()) == 7  # the start, 3 prompts, 3 answers
        assert "message 0" in spool.read_text()

        server.start()
        hook(env, host, "UserPromptSubmit", turns.prompt("and now it is back"))
        hook(env, host, "Stop", turns.answer("welcome back"))
        assert messages(server.url, token) == turns.turns  # each once, in order
        assert not spool.exists()
        log = (tmp_path / "client" / "hooks.log").read_text()
        assert "hook calls wait in the spool" in log and "service unreachable at" in log
    finally:
        server.stop()


@pytest.mark.parametrize("host", HOSTS)
def test_a_spooled_call_sent_twice_stores_nothing_new(host, tmp_path, processes):
    """A client killed after the service took its spooled calls but before it struck
    them from the spool sends them again: they are the same calls (their ids), so the
    service gives them the uids it gave them the first time, a repeated prompt's count
    included, and stores nothing new."""
    server = AppServer(tmp_path / "data").start()
    try:
        token = create_entity(server.data_dir, "lyra")
        env = client_env(server.url, token, tmp_path, PPS_HOOK_BUDGET_S="20")
        turns = Turns(host, tmp_path)
        hook(env, host, "UserPromptSubmit", turns.prompt("the same question"))
        hook(env, host, "Stop", turns.answer("an answer"))
        server.stop()
        hook(env, host, "UserPromptSubmit", turns.prompt("the same question"))
        hook(env, host, "Stop", turns.answer("another answer"))
        [spool] = (tmp_path / "client").glob("hooks-*.jsonl")
        unsent = spool.read_bytes()
        server.start()
        hook(env, host, "UserPromptSubmit", turns.prompt("a third question"))
        assert not spool.exists()

        spool.write_bytes(unsent)  # as if the flush had died before striking them
        spool.chmod(0o600)
        hook(env, host, "Stop", turns.answer("a third answer"))
        assert not spool.exists()
        assert messages(server.url, token) == turns.turns  # the repeated prompt twice, once each
    finally:
        server.stop()
