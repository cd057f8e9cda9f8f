"""Claude Code's http hooks, served by the running service (POST /v1/hooks/claude-code):
the payloads Claude Code 2.1 posts, as it posts them, to the real server; the answers in
its hook output shape; and the hooks `pps hooks install claude-code` writes, run the way
Claude Code runs them (an http hook POSTed, a command hook through a shell with the
payload on stdin), through an outage of the service, losing nothing and storing nothing
twice."""

from __future__ import annotations

import json
import subprocess
import uuid

import httpx
import pytest

from ingest.claude_code import user_turn_uid
from tests.conftest import AppServer, create_entity
from tests.fixtures_ingest import Transcript, all_events, client_env, pps, run_hook, token_of

ROUTE = "/v1/hooks/claude-code"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # Recall's per-layer budgets are a safety net for a stuck layer; a busy test machine
    # must not trip them, or a layer these tests look at would be skipped.
    data_dir = tmp_path_factory.mktemp("pps") / "data"
    with AppServer(data_dir, recall_budget_ms=20000, recall_startup_budget_ms=20000) as app:
        yield app


def payload(transcript: Transcript, event: str, **fields) -> dict:
    """What Claude Code 2.1 posts for `event` (its hook input: the common fields, then the
    event's own; SessionStart is sent before a permission mode is known)."""
    common = {
        "session_id": transcript.session,
        "transcript_path": str(transcript.path),
        "cwd": transcript.cwd,
        "prompt_id": str(uuid.uuid4()),
    }
    if event != "SessionStart":
        common["permission_mode"] = "default"
    return {**common, "hook_event_name": event, **fields}


def test_a_prompt_is_captured_and_its_recall_answered_in_claude_codes_shape(client, tmp_path):
    client.post("/v1/anchors", json={"title": "Robe", "content": "The comfy robe, a gift."})
    transcript = Transcript(tmp_path / "t.jsonl")
    prompt = "Why don't you go pull on that comfy robe of yours?"
    body = payload(transcript, "UserPromptSubmit", prompt=prompt, session_title="Robes")
    answer = client.post(ROUTE, json=body)
    assert answer.status_code == 200, answer.text
    [output] = answer.json().values()
    assert output["hookEventName"] == "UserPromptSubmit"
    context = output["additionalContext"]
    assert context.startswith("# Memory (ambient recall") and "The comfy robe" in context
    assert prompt not in context  # never the prompt it answers
    [turn] = all_events(client)
    assert (turn["role"], turn["content"], turn["channel"]) == ("user", prompt, "terminal:claude")
    assert turn["session_id"] == transcript.session
    assert turn["event_uid"] == user_turn_uid(transcript.session, prompt, 0)
    assert turn["metadata"]["cwd"] == transcript.cwd


def test_session_start_records_its_marker_and_answers_the_startup_recall(client, tmp_path):
    client.post("/v1/anchors", json={"title": "Robe", "content": "The comfy robe, a gift."})
    transcript = Transcript(tmp_path / "t.jsonl")
    body = payload(
        transcript, "SessionStart", source="resume", model="claude-opus-4-5", session_title="Robes"
    )
    answer = client.post(ROUTE, json=body)
    assert answer.status_code == 200, answer.text
    output = answer.json()["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    assert "The comfy robe" in output["additionalContext"]
    [start] = all_events(client)
    assert (start["event_type"], start["session_id"]) == ("session_start", transcript.session)
    assert start["metadata"]["start_source"] == "resume"


def test_an_empty_prompt_stores_nothing_and_adds_nothing(client, tmp_path):
    transcript = Transcript(tmp_path / "t.jsonl")
    answer = client.post(ROUTE, json=payload(transcript, "UserPromptSubmit", prompt="  \n"))
    assert (answer.status_code, answer.json()) == (200, {})
    assert all_events(client) == []


def test_a_repeated_prompt_is_two_turns_and_the_transcript_sweep_stores_neither_again(
    server, client, tmp_path, processes
):
    env = client_env(server.url, token_of(client), tmp_path, PPS_HOOK_BUDGET_S="20")
    transcript = Transcript(tmp_path / "t.jsonl")
    for answer in ("Continuing.", "Continuing again."):
        body = payload(transcript, "UserPromptSubmit", prompt="continue")
        assert client.post(ROUTE, json=body).status_code == 200
        transcript.user("continue")
        transcript.assistant(answer)
    stop = json.dumps(
        payload(
            transcript, "Stop", stop_hook_active=False, last_assistant_message="Continuing again."
        )
    )
    assert run_hook("Stop", env=env, stdin=stop).returncode == 0
    stored = all_events(client)
    assert sorted((e["role"], e["content"]) for e in stored) == sorted(transcript.turns)
    uids = [e["event_uid"] for e in stored if e["role"] == "user"]
    assert uids == [user_turn_uid(transcript.session, "continue", n) for n in (0, 1)]


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ([1, 2], "body", "JSON object"),
        ({"hook_event_name": "UserPromptSubmit", "prompt": "hi"}, "session_id", "missing"),
        ({"session_id": "s", "hook_event_name": "Elsewhere"}, "hook_event_name", "Elsewhere"),
        ({"session_id": "s", "hook_event_name": "Stop"}, "hook_event_name", "command hook"),
        ({"session_id": "s", "hook_event_name": "SessionEnd"}, "hook_event_name", "command"),
        ({"session_id": "s" * 300, "hook_event_name": "SessionStart"}, "session_id", "256"),
        ({"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": 5}, "prompt", "text"),
    ],
)
def test_what_is_no_hook_payload_served_here_is_refused_by_name(client, body, field, says):
    answer = client.post(ROUTE, json=body)
    assert answer.status_code == 422, answer.text
    problem = answer.json()
    assert problem["error"] == "invalid_input"
    assert problem["problems"][0]["field"] == field and says in problem["message"]
    assert all_events(client) == []


def test_without_the_token_nothing_is_stored(server, client, tmp_path):
    body = payload(Transcript(tmp_path / "t.jsonl"), "UserPromptSubmit", prompt="hello")
    answer = httpx.post(server.url + ROUTE, json=body)
    assert answer.status_code == 401 and answer.json()["error"] == "unauthorized"
    assert all_events(client) == []


# --- the installed hooks, run as Claude Code runs them ---------------------------------


def run_hooks(settings: dict, event: str, body: dict, cwd, env: dict) -> list[dict]:
    """Every hook of ours for `event` as Claude Code 2.1 runs it: an http hook is POSTed
    the payload (headers as written; a failure is ignored, as Claude Code ignores it); a
    command runs through a shell with the payload on stdin, as Claude Code runs it. The
    JSON answers, in order."""
    answers = []
    for group in settings["hooks"].get(event, []):
        for hook in group["hooks"]:
            if hook["type"] == "http":
                try:
                    reply = httpx.post(
                        hook["url"], json=body, headers=hook["headers"], timeout=hook["timeout"]
                    )
                except httpx.HTTPError:
                    continue
                if reply.is_success:
                    answers.append(reply.json() if reply.content.strip() else {})
                continue
            done = subprocess.run(
                ["bash", "-c", hook["command"]],
                input=json.dumps(body),
                text=True,
                capture_output=True,
                cwd=cwd,
                env=env,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            answers.append(json.loads(done.stdout) if done.stdout.strip() else {})
    return answers


def test_three_prompts_while_the_service_is_down_are_each_stored_once_when_it_is_back(
    tmp_path, processes
):
    server = AppServer(tmp_path / "data").start()
    try:
        token = create_entity(server.data_dir, "lyra")
        env = client_env(server.url, token, tmp_path, PPS_HOOK_BUDGET_S="20")
        project = tmp_path / "project"
        project.mkdir()
        assert pps("hooks", "install", "--project", str(project), env=env).returncode == 0
        path = project / ".claude" / "settings.local.json"
        settings = json.loads(path.read_text())
        # What Claude Code runs carries nothing of ours in its environment (the hooks name
        # the service, the token file and the token themselves) but the generous budget.
        kept = ("PPS_CLIENT_DIR", "PPS_HOOK_BUDGET_S")
        bare = {k: v for k, v in env.items() if not k.startswith("PPS_") or k in kept}
        transcript = Transcript(tmp_path / "session.jsonl", cwd=str(project))

        def turn(prompt: str, reply: str) -> list[dict]:
            body = payload(transcript, "UserPromptSubmit", prompt=prompt)
            answers = run_hooks(settings, "UserPromptSubmit", body, project, bare)
            transcript.user(prompt)  # Claude Code writes the prompt after its hook
            transcript.assistant(reply)
            stop = payload(transcript, "Stop", stop_hook_active=False, last_assistant_message=reply)
            run_hooks(settings, "Stop", stop, project, bare)
            return answers

        start = payload(transcript, "SessionStart", source="startup", model="claude-opus-4-5")
        run_hooks(settings, "SessionStart", start, project, bare)
        assert len(turn("good morning", "Morning! The kettle is on.")) == 1
        server.stop()
        for n in range(3):
            assert turn(f"message {n} while pps is down", f"answer {n}") == []
        server.start()
        [answer] = turn("and now?", "Back again.")
        assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"

        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as api:
            stored = all_events(api)
        turns = [(e["role"], e["content"]) for e in stored if e["event_type"] == "message"]
        assert sorted(turns) == sorted(transcript.turns)  # every turn, each once
        assert [e["event_type"] for e in stored].count("session_start") == 1
        spool = pps("ingest", "flush", env=env)
        assert "no event waits" in spool.stdout, spool.stdout + spool.stderr
    finally:
        server.stop()
